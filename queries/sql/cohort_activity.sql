-- Cohort retention counts. A person's cohort is the period of their first qualifying event
-- (over all history, so someone who first qualified before the range is in no cohort); a person is
-- active in period N after it when they did the return event then.
WITH person_events AS (
    SELECT person_id, ts, name, json_extract_string(metadata, '$.orderId') AS order_ref
    FROM events_people
    WHERE site_id = $site_id AND date <= $scan_end
    UNION ALL
    SELECT person_id, ts, 'purchase' AS name, order_id AS order_ref
    FROM orders_people
    WHERE site_id = $site_id AND date <= $scan_end AND NOT is_refund
),
firsts AS (
    SELECT person_id, min(ts) AS first_ts
    FROM person_events
    WHERE CASE $cohort_type
        WHEN 'first_visit' THEN true
        WHEN 'signup' THEN name = 'user_signup'
        WHEN 'first_purchase' THEN name = 'purchase'
    END
    GROUP BY person_id
),
cohorts AS (
    SELECT person_id, date_trunc($interval, timezone($timezone, first_ts)) AS cohort_start
    FROM firsts
    WHERE first_ts >= $range_start AND first_ts < $range_end
),
activity AS (
    SELECT DISTINCT c.person_id, c.cohort_start,
        date_diff($interval, c.cohort_start, date_trunc($interval, timezone($timezone, e.ts))) AS period
    FROM cohorts AS c
    JOIN person_events AS e ON e.person_id = c.person_id
    WHERE ($return_event IS NULL OR e.name = $return_event)
      AND timezone($timezone, e.ts) >= c.cohort_start
),
calendar AS (
    SELECT person_id, date_diff($interval, $first_bucket, cohort_start) AS cohort_index,
        date_diff($interval, $first_bucket, cohort_start) + period AS calendar_index
    FROM activity
),
final AS (
    SELECT 'size' AS kind, cohort_start, NULL::BIGINT AS period, count(*) AS people
    FROM cohorts GROUP BY cohort_start
    UNION ALL
    SELECT 'on', cohort_start, period, count(DISTINCT person_id) FROM activity GROUP BY cohort_start, period
    UNION ALL
    SELECT 'max', cohort_start, max_period, count(*)
    FROM (SELECT person_id, cohort_start, max(period) AS max_period FROM activity GROUP BY ALL)
    GROUP BY cohort_start, max_period
    UNION ALL
    SELECT 'active', NULL, calendar_index, count(*) FROM calendar GROUP BY calendar_index
    UNION ALL
    SELECT 'returning', NULL, calendar_index, count(*) FROM calendar
    WHERE cohort_index < calendar_index GROUP BY calendar_index
    UNION ALL
    SELECT 'churned', NULL, a.calendar_index + 1, count(*) FROM calendar AS a
    WHERE NOT EXISTS (
        SELECT 1 FROM calendar AS b WHERE b.person_id = a.person_id AND b.calendar_index = a.calendar_index + 1
    )
    GROUP BY a.calendar_index + 1
)
SELECT kind, cohort_start, period, people FROM final ORDER BY kind, cohort_start NULLS FIRST, period
