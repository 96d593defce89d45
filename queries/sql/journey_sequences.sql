-- One page of the journeys of `journey_summary` as their event names in order, newest first. The page
-- is chosen first: ordering every journey's names costs seconds on a month of 10 M entries.
WITH page AS (
    SELECT journey_key, started_at
    FROM journey_summary
    ORDER BY started_at DESC, journey_key
    LIMIT $limit OFFSET $offset
),
sequences AS (
    SELECT s.journey_key, list(s.name ORDER BY s.ts, s.source, s.id) AS sequence
    FROM journey_stream($site_id, $scan_from) AS s
    SEMI JOIN page AS p USING (journey_key)
    GROUP BY s.journey_key
)
SELECT p.journey_key, q.sequence
FROM page AS p
JOIN sequences AS q USING (journey_key)
ORDER BY p.started_at DESC, p.journey_key
