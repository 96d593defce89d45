-- One row per journey of `journey_stream`: its person (of its first entry), times, entry and exit
-- pages, entry count, whether it holds a purchase, and its sales per currency (never summed across;
-- the stream's sales are the journeys' rows of `journey_sales`, read there so the stream is read once).
CREATE OR REPLACE TEMP TABLE journey_summary AS
WITH revenue AS (
    SELECT s.journey_key, s.currency, sum(s.total) AS amount
    FROM journey_sales AS s
    SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
    GROUP BY s.journey_key, s.currency
),
revenue_lists AS (
    SELECT journey_key, list({'currency': currency, 'amount': amount} ORDER BY currency) AS revenue
    FROM revenue
    GROUP BY journey_key
),
journeys AS (
    SELECT journey_key,
        first(person_id ORDER BY ts, source, id) AS person_id,
        first(visitor_id ORDER BY ts, source, id) AS visitor_id,
        min(ts) AS started_at,
        max(ts) AS ended_at,
        (epoch_us(max(ts)) - epoch_us(min(ts))) / 1000000 AS duration_seconds,
        count(*) AS event_count,
        bool_or(name = 'purchase') AS converted,
        first(url ORDER BY ts, source, id) FILTER (WHERE url IS NOT NULL AND url <> '') AS entry_url,
        last(url ORDER BY ts, source, id) FILTER (WHERE url IS NOT NULL AND url <> '') AS exit_url
    FROM journey_stream($site_id, $scan_from)
    GROUP BY journey_key
),
final AS (
    SELECT j.*, coalesce(r.revenue, []) AS revenue
    FROM journeys AS j
    LEFT JOIN revenue_lists AS r USING (journey_key)
)
SELECT * FROM final
