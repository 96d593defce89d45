-- Per period and category: people whose latest stated value within that period is granted, and
-- refused; with the period's people (any observation) and consent records. Periods are
-- [$starts[i], $ends[i]) (UTC instants of the site's local period starts); `period` is i (1-based).
WITH periods AS (
    SELECT unnest($starts) AS period_start, unnest($ends) AS period_end,
        generate_subscripts($starts, 1) AS period
),
placed AS (
    SELECT p.period, s.*
    FROM consent_states AS s
    JOIN periods AS p ON s.ts >= p.period_start AND s.ts < p.period_end
),
latest AS (
    SELECT period, person_id, category, arg_max(granted, (ts, rank, id)) AS granted
    FROM placed
    GROUP BY period, person_id, category
),
by_category AS (
    SELECT period, category,
        count(*) FILTER (WHERE granted) AS granted, count(*) FILTER (WHERE NOT granted) AS denied
    FROM latest
    GROUP BY period, category
),
totals AS (
    SELECT period, count(DISTINCT person_id) AS people,
        count(DISTINCT id) FILTER (WHERE kind = 'record') AS records
    FROM placed
    GROUP BY period
)
SELECT t.period, t.people, t.records, c.category, c.granted, c.denied
FROM totals AS t
JOIN by_category AS c USING (period)
ORDER BY t.period, c.category
