-- Cohort retention counts. A person's cohort is the period of their first qualifying event
-- (over all history, so someone who first qualified before the range is in no cohort); a person is
-- active in period N after it when they did the return event then.
WITH person_events AS (
    SELECT person_id, ts, name
    FROM events_people
    WHERE site_id = $site_id AND date <= $scan_end
    UNION ALL
    SELECT person_id, ts, 'purchase' AS name
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
-- the periods each person was active in, before joining: far fewer rows than events
person_periods AS (
    SELECT DISTINCT person_id, date_trunc($interval, timezone($timezone, ts)) AS bucket
    FROM person_events
    WHERE $return_event IS NULL OR name = $return_event
),
activity AS (
    SELECT c.person_id, c.cohort_start, date_diff($interval, c.cohort_start, p.bucket) AS period
    FROM cohorts AS c
    JOIN person_periods AS p ON p.person_id = c.person_id
    WHERE p.bucket >= c.cohort_start
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
    -- churned in X: active in X - 1 and not in X, i.e. the person's next active period is not X
    SELECT 'churned', NULL, calendar_index + 1, count(*)
    FROM (
        SELECT calendar_index,
            lead(calendar_index) OVER (PARTITION BY person_id ORDER BY calendar_index) AS next_index
        FROM calendar
    )
    WHERE next_index IS NULL OR next_index <> calendar_index + 1
    GROUP BY calendar_index + 1
)
SELECT kind, cohort_start, period, people FROM final ORDER BY kind, cohort_start NULLS FIRST, period
