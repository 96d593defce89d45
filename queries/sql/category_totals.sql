-- Headline counts over `category_events` and `category_sales`. A viewer converts when they bought a
-- line of these categories at or after their first view of them in the range.
WITH viewers AS (
    SELECT person_id, min(ts) AS first_view
    FROM category_events
    WHERE name = 'category_view'
    GROUP BY person_id
),
buyers AS (
    SELECT person_id, max(ts) AS last_purchase
    FROM category_sales
    GROUP BY person_id
)
SELECT
    (SELECT count(*) FILTER (WHERE name = 'category_view') FROM category_events) AS category_views,
    (SELECT count(*) FROM viewers) AS viewers,
    (SELECT count(DISTINCT (person_id, session_id)) FILTER (WHERE name = 'category_view')
        FROM category_events) AS sessions,
    (SELECT count(*) FILTER (WHERE name = 'category_filter') FROM category_events) AS filter_uses,
    (SELECT count(*) FILTER (WHERE name = 'product_view') FROM category_events) AS product_views,
    (SELECT count(DISTINCT person_id) FILTER (WHERE name = 'product_view') FROM category_events)
        AS product_viewers,
    (SELECT count(*) FILTER (WHERE name = 'add_to_cart') FROM category_events) AS add_to_carts,
    (SELECT count(DISTINCT person_id) FILTER (WHERE name = 'add_to_cart') FROM category_events)
        AS cart_adders,
    (SELECT count(DISTINCT category_path) FROM (
        SELECT category_path FROM category_events UNION ALL SELECT category_path FROM category_sales
    )) AS categories,
    (SELECT count(DISTINCT order_id) FROM category_sales) AS orders,
    (SELECT coalesce(sum(quantity), 0) FROM category_sales) AS units_sold,
    (SELECT count(*) FROM buyers) AS buyers,
    (SELECT count(*) FROM viewers AS v JOIN buyers AS b USING (person_id) WHERE b.last_purchase >= v.first_view)
        AS converted_viewers
