-- One row per journey of `journey_stream`: its person (of its first entry), times, entry and exit
-- pages, entry count, whether it holds a purchase, and its sales per currency (never summed across).
CREATE OR REPLACE TEMP TABLE journey_summary AS
WITH revenue AS (
    SELECT journey_key, currency, sum(amount) AS amount, count(*) AS orders
    FROM journey_stream
    WHERE source = 'order'
    GROUP BY journey_key, currency
),
revenue_lists AS (
    SELECT journey_key, list({'currency': currency, 'amount': amount} ORDER BY currency) AS revenue
    FROM revenue
    GROUP BY journey_key
),
journeys AS (
    SELECT journey_key,
        arg_min(person_id, seq) AS person_id,
        arg_min(visitor_id, seq) AS visitor_id,
        min(ts) AS started_at,
        max(ts) AS ended_at,
        (epoch_us(max(ts)) - epoch_us(min(ts))) / 1000000 AS duration_seconds,
        count(*) AS event_count,
        bool_or(name = 'purchase') AS converted,
        arg_min(url, seq) FILTER (WHERE url IS NOT NULL AND url <> '') AS entry_url,
        arg_max(url, seq) FILTER (WHERE url IS NOT NULL AND url <> '') AS exit_url
    FROM journey_stream
    GROUP BY journey_key
),
final AS (
    SELECT j.*, coalesce(r.revenue, []) AS revenue
    FROM journeys AS j
    LEFT JOIN revenue_lists AS r USING (journey_key)
)
SELECT * FROM final
