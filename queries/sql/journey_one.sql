-- One journey by its key (a journey_id, or the session_id of events that carry none), if it has
-- events or a sale `journey_sales` placed in it.
CREATE OR REPLACE TEMP TABLE journey_keys AS
SELECT coalesce(nullif(journey_id, ''), session_id) AS journey_key
FROM events
WHERE site_id = $site_id AND coalesce(nullif(journey_id, ''), session_id) = $journey_key
UNION
SELECT journey_key FROM journey_sales WHERE journey_key = $journey_key
