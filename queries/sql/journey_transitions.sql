-- Consecutive event names inside the journeys of `journey_stream`: every pair and triple, how often
-- it occurs and in how many journeys. Triples have a non-null `third`.
WITH steps AS (
    SELECT journey_key, name AS first,
        lead(name, 1) OVER journey AS second,
        lead(name, 2) OVER journey AS third
    FROM journey_stream($site_id, $scan_from)
    WINDOW journey AS (PARTITION BY journey_key ORDER BY ts, source, id)
),
pairs AS (
    SELECT first, second, NULL::VARCHAR AS third, count(*) AS occurrences,
        count(DISTINCT journey_key) AS journeys
    FROM steps
    WHERE second IS NOT NULL
    GROUP BY first, second
),
triples AS (
    SELECT first, second, third, count(*) AS occurrences, count(DISTINCT journey_key) AS journeys
    FROM steps
    WHERE third IS NOT NULL
    GROUP BY first, second, third
)
SELECT * FROM pairs
UNION ALL
SELECT * FROM triples
