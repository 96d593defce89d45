-- Per category: people whose latest stated value in the range is granted, and refused. One row per
-- category that anyone stated.
WITH latest AS (
    SELECT person_id, category, arg_max(granted, (ts, rank, id)) AS granted
    FROM consent_states
    GROUP BY person_id, category
)
SELECT category, count(*) FILTER (WHERE granted) AS granted, count(*) FILTER (WHERE NOT granted) AS denied
FROM latest
GROUP BY category
