-- Per site and product, the search clicks of `search_steps`: clicks, people, distinct queries and
-- the three queries with most clicks (ties by query). Totals over every product, also those past $limit.
WITH clicks AS (
    SELECT * FROM search_steps WHERE is_click
),
per_query AS (
    SELECT site_id, product_item_code, query, count(*) AS clicks
    FROM clicks
    WHERE query IS NOT NULL
    GROUP BY ALL
),
top_queries AS (
    SELECT site_id, product_item_code,
        list(struct_pack(query, clicks) ORDER BY clicks DESC, query)[1:3] AS top_queries
    FROM per_query
    GROUP BY ALL
),
per_product AS (
    SELECT site_id, product_item_code, count(*) AS clicks, count(DISTINCT person_id) AS people,
        count(DISTINCT query) AS queries
    FROM clicks
    GROUP BY ALL
)
SELECT p.*, coalesce(t.top_queries, []) AS top_queries, sum(p.clicks) OVER () AS total_clicks
FROM per_product AS p
LEFT JOIN top_queries AS t USING (site_id, product_item_code)
ORDER BY p.clicks DESC, p.people DESC, p.product_item_code, p.site_id
LIMIT $limit
