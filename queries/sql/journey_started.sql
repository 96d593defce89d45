-- The journeys of a site that started inside [$range_start, $range_end): a journey is the events of
-- one journey_id (events without one fall back to their session_id) and the sales `journey_sales`
-- placed in it; it starts at its first entry, so a journey with an entry before the range started
-- earlier and is left out. A purchase event naming a sale is no entry of its own (journey_stream: the
-- sale is), so it neither starts a journey nor makes one start earlier.
CREATE OR REPLACE TEMP TABLE journey_keys AS
WITH entries AS (
    SELECT coalesce(nullif(journey_id, ''), session_id) AS journey_key, ts
    FROM events
    WHERE site_id = $site_id AND date <= $scan_end AND ts < $range_end
      AND NOT coalesce(name = 'purchase' AND json_extract_string(metadata, '$.orderId') IN (
          SELECT order_id FROM journey_sales
      ), false)
    UNION ALL
    SELECT journey_key, ts FROM journey_sales WHERE ts < $range_end
),
final AS (
    SELECT journey_key
    FROM entries
    GROUP BY journey_key
    HAVING min(ts) >= $range_start
)
SELECT journey_key FROM final
