-- One page of the journeys of `journey_summary` as their event names in order, newest first.
WITH sequences AS (
    SELECT journey_key, list(name ORDER BY seq) AS sequence
    FROM journey_stream
    GROUP BY journey_key
)
SELECT s.journey_key, q.sequence
FROM journey_summary AS s
JOIN sequences AS q USING (journey_key)
ORDER BY s.started_at DESC, s.journey_key
LIMIT $limit OFFSET $offset
