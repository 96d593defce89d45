-- The journeys of a site that started inside [$range_start, $range_end): a journey is the events of
-- one journey_id (events without one fall back to their session_id) and the sales `journey_sales`
-- placed in it; it starts at its first entry, so a journey with an event or a sale before the range
-- started earlier and is left out.
CREATE OR REPLACE TEMP TABLE journey_keys AS
WITH in_range AS (
    SELECT coalesce(nullif(journey_id, ''), session_id) AS journey_key
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end
    UNION
    SELECT journey_key FROM journey_sales WHERE ts >= $range_start AND ts < $range_end
),
earlier AS (
    SELECT coalesce(nullif(journey_id, ''), session_id) AS journey_key
    FROM events
    WHERE site_id = $site_id AND date <= $scan_start AND ts < $range_start
    UNION
    SELECT journey_key FROM journey_sales WHERE ts < $range_start
),
final AS (
    SELECT journey_key FROM in_range
    ANTI JOIN earlier USING (journey_key)
)
SELECT journey_key FROM final
