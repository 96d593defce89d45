-- Replays the site's events of the range through a consent gate that needs every category of the
-- $need_* flags granted. The state at an instant is, per category, the latest value stated at or
-- before it: by a consent record of any earlier date, or by an event of the range or of the wait
-- after it (an event's own fields count at its own instant; at the same microsecond a record wins).
-- An event is `sent` when the gate is open at its instant; `delayed` when it opens later but at most
-- $timeout_us µs after it; `dropped` otherwise, split by whether, when the wait ended, a required
-- category was stated refused (`dropped_refused`) or only never stated.
WITH records AS (
    SELECT person_of(l.user_id, c.user_id, c.visitor_id) AS person_id, c.ts, 1 AS rank,
        c.consent_id AS id, c.consent_necessary AS necessary, c.consent_analytics AS analytics,
        c.consent_marketing AS marketing, c.consent_preferences AS preferences
    FROM consents AS c
    LEFT JOIN visitor_users_in([$site_id]) AS l ON l.site_id = c.site_id AND l.visitor_id = c.visitor_id
    WHERE c.site_id = $site_id AND c.date <= $scan_end AND c.ts <= $wait_end
),
site_events AS MATERIALIZED (
    SELECT person_id, ts, 0 AS rank, event_id AS id, consent_necessary AS necessary,
        consent_analytics AS analytics, consent_marketing AS marketing, consent_preferences AS preferences
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts <= $wait_end
),
observations AS (
    SELECT * FROM records
    UNION ALL
    SELECT * FROM site_events
),
instants AS (
    -- What one instant of one person states: per category, the last value stated at it.
    SELECT person_id, ts,
        arg_max(necessary, (rank, id)) FILTER (WHERE necessary IS NOT NULL) AS necessary,
        arg_max(analytics, (rank, id)) FILTER (WHERE analytics IS NOT NULL) AS analytics,
        arg_max(marketing, (rank, id)) FILTER (WHERE marketing IS NOT NULL) AS marketing,
        arg_max(preferences, (rank, id)) FILTER (WHERE preferences IS NOT NULL) AS preferences
    FROM observations
    GROUP BY person_id, ts
),
states AS (
    SELECT person_id, ts,
        last_value(necessary IGNORE NULLS) OVER so_far AS necessary,
        last_value(analytics IGNORE NULLS) OVER so_far AS analytics,
        last_value(marketing IGNORE NULLS) OVER so_far AS marketing,
        last_value(preferences IGNORE NULLS) OVER so_far AS preferences
    FROM instants
    WINDOW so_far AS (PARTITION BY person_id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
gate AS MATERIALIZED (
    SELECT person_id, ts,
        (NOT $need_necessary OR coalesce(necessary, false))
            AND (NOT $need_analytics OR coalesce(analytics, false))
            AND (NOT $need_marketing OR coalesce(marketing, false))
            AND (NOT $need_preferences OR coalesce(preferences, false)) AS open,
        ($need_necessary AND NOT coalesce(necessary, true))
            OR ($need_analytics AND NOT coalesce(analytics, true))
            OR ($need_marketing AND NOT coalesce(marketing, true))
            OR ($need_preferences AND NOT coalesce(preferences, true)) AS refused
    FROM states
),
timeline AS (
    SELECT person_id, ts, open,
        min(CASE WHEN open THEN ts END) OVER (
            PARTITION BY person_id ORDER BY ts ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING
        ) AS opens_at
    FROM gate
),
replayed AS (
    SELECT e.person_id, e.ts, t.opens_at, e.ts + to_microseconds($timeout_us) AS wait_until,
        CASE
            WHEN t.open THEN 'sent'
            WHEN t.opens_at <= e.ts + to_microseconds($timeout_us) THEN 'delayed'
            ELSE 'dropped'
        END AS outcome
    FROM site_events AS e
    JOIN timeline AS t ON t.person_id = e.person_id AND t.ts = e.ts
    WHERE e.ts < $range_end
),
ended AS (
    -- The gate as the wait of each event ended (its own instant's state at the latest).
    SELECT r.outcome, r.person_id, r.ts, r.opens_at, w.refused
    FROM replayed AS r
    ASOF JOIN gate AS w ON w.person_id = r.person_id AND r.wait_until >= w.ts
)
SELECT
    count(*) AS events,
    count(DISTINCT person_id) AS people,
    count(*) FILTER (WHERE outcome = 'sent') AS sent,
    count(*) FILTER (WHERE outcome = 'delayed') AS delayed,
    count(*) FILTER (WHERE outcome = 'dropped') AS dropped,
    count(*) FILTER (WHERE outcome = 'dropped' AND refused) AS dropped_refused,
    coalesce(sum(epoch_us(opens_at) - epoch_us(ts)) FILTER (WHERE outcome = 'delayed'), 0) AS delay_us_total,
    coalesce(max(epoch_us(opens_at) - epoch_us(ts)) FILTER (WHERE outcome = 'delayed'), 0) AS delay_us_max
FROM ended
