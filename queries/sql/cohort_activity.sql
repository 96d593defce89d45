-- Cohort retention, one row per cohort member: the period of their first qualifying event (their
-- cohort; over all history, so someone who first qualified before the range is in no cohort), the
-- last period they did the return event in, and the set of periods 0..$width - 1 they did it in.
--
-- Periods count from $bounds, the UTC instants (epoch µs) where the site's local periods start
-- ($bounds[1] starts period 0): (ts - $bounds[1]) // $nominal_us, exact when the periods all have
-- their nominal length ($even: days and weeks without a change of UTC offset), else corrected by
-- one against the boundaries (a local period is never a whole period off its nominal length). So
-- no event's time is converted to the time zone. Earlier events fall in period -1. People are
-- keyed by a 64-bit hash of their id and aggregated once: no per-period rows.
WITH person_events AS (
    SELECT person_id, ts, name
    FROM events_people
    WHERE site_id = $site_id AND date <= $scan_end
    UNION ALL
    SELECT person_id, ts, 'purchase' AS name
    FROM orders_people
    WHERE site_id = $site_id AND date <= $scan_end AND NOT is_refund
),
guessed AS (
    SELECT person_id, ts, name, epoch_us(ts) AS us,
        least(greatest((epoch_us(ts) - $bounds[1]) // $nominal_us, 0), len($bounds) - 2) AS guess
    FROM person_events
),
periods AS (
    SELECT hash(person_id) AS person_key, ts,
        CASE WHEN $even AND us >= $bounds[1] THEN guess
            ELSE guess - (us < $bounds[guess + 1])::BIGINT + (us >= $bounds[guess + 2])::BIGINT
        END AS period,
        CASE $cohort_type
            WHEN 'first_visit' THEN true
            WHEN 'signup' THEN name = 'user_signup'
            WHEN 'first_purchase' THEN name = 'purchase'
        END AS qualifies,
        $return_event IS NULL OR name = $return_event AS returns
    FROM guessed
    WHERE us < $bounds[-1]
),
-- only the events that can define a cohort or count as a return
kept AS (
    SELECT * FROM periods WHERE qualifies OR returns
),
people AS (
    SELECT person_key,
        min(ts) FILTER (WHERE qualifies) AS first_ts,
        arg_min(period, ts) FILTER (WHERE qualifies) AS cohort_index,
        max(period) FILTER (WHERE returns) AS last_period,
        bitstring_agg(period, 0, $width - 1) FILTER (WHERE returns AND period BETWEEN 0 AND $width - 1) AS active
    FROM kept
    GROUP BY person_key
)
SELECT cohort_index, last_period, coalesce(active, bitstring('0', $width)) AS active
FROM people
WHERE first_ts >= $range_start AND first_ts < $range_end
