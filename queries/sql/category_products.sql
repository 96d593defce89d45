-- Products of the categories in `category_events` and `category_sales`: their views, viewers, clicks
-- and add-to-carts there, the sales of their lines there (orders, units, buyers, revenue per
-- currency), and how many of their viewers bought them at or after viewing. A product is its
-- productId, as product analytics count it: events and lines carrying a code are the product whose id
-- derives from it (`product_id_of`), a line without one is the product its productId names, the same
-- product when that id derives from a code. Its code rides along (NULL when nothing here carries one).
WITH product_events AS (
    -- Only product events name a product: a category_view or category_filter carrying a code (a listing's
    -- featured product) neither lists it nor names it (its metadata.name is the category's).
    SELECT * FROM category_events
    WHERE name IN ('product_view', 'product_click', 'add_to_cart') AND product_item_code IS NOT NULL
),
product_codes AS (
    -- Each code once, with its product's id (one SHA-1 per code, not per row).
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (
        SELECT product_item_code AS code FROM product_events
        UNION SELECT product_item_code FROM category_sales WHERE product_item_code IS NOT NULL
    )
),
events AS (
    SELECT c.product_id AS product_key, e.*
    FROM product_events AS e
    JOIN product_codes AS c ON c.code = e.product_item_code
),
event_counts AS (
    SELECT product_key,
        count(*) FILTER (WHERE name = 'product_view') AS views,
        count(DISTINCT person_id) FILTER (WHERE name = 'product_view') AS viewers,
        count(*) FILTER (WHERE name = 'product_click') AS clicks,
        count(*) FILTER (WHERE name = 'add_to_cart') AS add_to_carts,
        -- The latest name; at one instant the later event id, so ties never depend on storage order.
        arg_max(product_name, (ts, event_id)) FILTER (WHERE product_name IS NOT NULL) AS product_name
    FROM events
    GROUP BY product_key
),
lines AS (
    SELECT coalesce(c.product_id, l.product_id) AS product_key, l.*
    FROM category_sales AS l
    LEFT JOIN product_codes AS c ON c.code = l.product_item_code
    WHERE coalesce(c.product_id, l.product_id) IS NOT NULL
),
product_sales AS (
    SELECT product_key, count(DISTINCT order_id) AS orders, sum(quantity) AS units_sold,
        count(DISTINCT person_id) AS buyers,
        arg_max(product_name, (ts, order_id, line_no)) FILTER (WHERE product_name IS NOT NULL) AS product_name
    FROM lines
    GROUP BY product_key
),
product_revenue AS (
    SELECT product_key, list(struct_pack(currency, revenue, orders) ORDER BY currency) AS revenue
    FROM (
        SELECT product_key, currency, sum(amount) AS revenue, count(DISTINCT order_id) AS orders
        FROM lines
        GROUP BY product_key, currency
    )
    GROUP BY product_key
),
first_views AS (
    SELECT product_key, person_id, min(ts) AS first_view
    FROM events
    WHERE name = 'product_view'
    GROUP BY ALL
),
viewers_who_bought AS (
    SELECT v.product_key, count(DISTINCT v.person_id) AS people
    FROM first_views AS v
    SEMI JOIN lines AS l ON l.product_key = v.product_key AND l.person_id = v.person_id AND l.ts >= v.first_view
    GROUP BY v.product_key
),
final AS (
    SELECT coalesce(e.product_key, s.product_key) AS product_id, c.code,
        coalesce(e.product_name, s.product_name) AS product_name,
        coalesce(e.views, 0) AS views, coalesce(e.viewers, 0) AS viewers, coalesce(e.clicks, 0) AS clicks,
        coalesce(e.add_to_carts, 0) AS add_to_carts, coalesce(s.orders, 0) AS orders,
        coalesce(s.units_sold, 0) AS units_sold, coalesce(s.buyers, 0) AS buyers,
        coalesce(w.people, 0) AS viewers_who_bought, coalesce(r.revenue, []) AS revenue
    FROM event_counts AS e
    FULL JOIN product_sales AS s ON s.product_key = e.product_key
    LEFT JOIN product_revenue AS r ON r.product_key = coalesce(e.product_key, s.product_key)
    LEFT JOIN viewers_who_bought AS w ON w.product_key = coalesce(e.product_key, s.product_key)
    LEFT JOIN product_codes AS c ON c.product_id = coalesce(e.product_key, s.product_key)
)
SELECT * FROM final
ORDER BY views DESC, orders DESC, code NULLS LAST, product_id
LIMIT $limit
