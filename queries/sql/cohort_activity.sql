-- Cohort retention, one row per cohort member: when they first qualified (epoch µs; over all
-- history, so someone who first qualified before the range is in no cohort) and which of the 128
-- periods from $slab on they did the return event in, as two 64-bit masks (bit i of `early`: period
-- $slab + i; of `late`: period $slab + 64 + i). Periods from $width on all count as period $width:
-- the report only needs to know whether there was any activity that late.
--
-- Periods count from $bounds, the UTC instants (epoch µs) where the site's local periods start
-- ($bounds[1] starts period 0): (ts - $bounds[1]) // $nominal_us, exact when the periods all have
-- their nominal length ($even: days and weeks without a change of UTC offset), else corrected by
-- one against the boundaries (a local period is never a whole period off its nominal length). So
-- no event's time is converted to the time zone. Earlier events fall in period -1. People are
-- keyed by a 64-bit hash of their id and aggregated once, into two fixed-size numbers each
-- (aggregate states that small keep the hash table fast; no FILTER clauses for the same reason).
--
-- Events in [$rolled_start, $rolled_end) are left out: the visitor-activity rollup of those whole
-- months stands for them ($rolled_first_date..$rolled_last_date: the UTC days wholly inside, whose
-- partitions are not even opened). With $all_people, everyone is returned, not only the people whose
-- first qualifying event is in the range: the caller merges them with the rollup's people first.
WITH person_events AS (
    SELECT hash(person_id) AS person_key, epoch_us(ts) AS us, name
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date <= $scan_end
        AND (date < $rolled_first_date OR date > $rolled_last_date)
        AND (ts < $rolled_start OR ts >= $rolled_end)
        AND NOT (name = 'purchase' AND coalesce($cohort_type = 'first_purchase' OR $return_event = 'purchase', false))
    UNION ALL
    -- A purchase event naming a sale is that sale (counted from the orders below, for the order's
    -- person), so to its sender it is activity, not a purchase. Asked only when purchases matter,
    -- and in a scan of its own: only purchase events' metadata is read (~10 % of a first-visit
    -- cohort's time when every event's was).
    SELECT hash(person_id), epoch_us(ts), CASE WHEN names_a_sale(site_id, metadata) THEN NULL ELSE name END
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date <= $scan_end
        AND (date < $rolled_first_date OR date > $rolled_last_date)
        AND (ts < $rolled_start OR ts >= $rolled_end)
        AND name = 'purchase' AND coalesce($cohort_type = 'first_purchase' OR $return_event = 'purchase', false)
    UNION ALL
    SELECT hash(person_id), epoch_us(ts), 'purchase'
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date <= $scan_end AND NOT is_refund
),
flagged AS (
    SELECT person_key, us,
        least(greatest((us - $bounds[1]) // $nominal_us, 0), len($bounds) - 2) AS guess,
        CASE $cohort_type
            WHEN 'first_visit' THEN true
            WHEN 'signup' THEN name = 'user_signup'
            WHEN 'first_purchase' THEN name = 'purchase'
        END AS qualifies,
        $return_event IS NULL OR name = $return_event AS returns
    FROM person_events
),
periods AS (
    SELECT person_key, us, qualifies, returns,
        least(CASE WHEN $even AND us >= $bounds[1] AND us < $bounds[-1] THEN guess
            ELSE guess - (us < $bounds[guess + 1])::BIGINT + (us >= $bounds[guess + 2])::BIGINT
        END, $width) AS period
    FROM flagged
    WHERE qualifies OR returns  -- only events that can define a cohort or count as a return
),
people AS (
    SELECT person_key,
        min(CASE WHEN qualifies THEN us END) AS first_us,
        bit_or(CASE WHEN returns AND period >= $slab AND period < $slab + 128
            THEN 1::UHUGEINT << (period - $slab)::UHUGEINT ELSE 0::UHUGEINT END) AS active
    FROM periods
    GROUP BY person_key
)
SELECT person_key, first_us,
    (active & 18446744073709551615::UHUGEINT)::UBIGINT AS early, (active >> 64::UHUGEINT)::UBIGINT AS late
FROM people
WHERE $all_people OR (first_us >= $range_start_us AND first_us < $range_end_us)
