-- The best-selling products of each currency in the range (refunds apart; a line of quantity 0 bought
-- nothing): line revenue (quantity times unit price), sales holding the product and units, ranked within
-- the currency by $sort_by (revenue, units or orders; ties by code, products known only by their
-- productId last, then by productId); at most $limit per currency. A product is its productId: a line
-- carrying a code is the product whose id derives from it (`product_id_of`), a line without one is the
-- product its productId names, the same product when that id derives from a code. Views and add-to-carts
-- of the product in the range ride along (the same on each currency row of a product), and so does its
-- code, from its lines or those events (NULL when neither carries one).
WITH lines AS (
    SELECT order_id, currency, nullif(item.product_item_code, '') AS code, item.product_id AS line_product_id,
        item.quantity AS quantity, item.price AS price
    FROM (
        SELECT order_id, currency, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
            AND ($currency IS NULL OR currency = $currency)
    )
    WHERE item.quantity > 0
),
activity AS (
    SELECT product_item_code AS code, count(*) FILTER (WHERE name = 'product_view') AS views,
        count(*) FILTER (WHERE name = 'add_to_cart') AS add_to_carts
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND name IN ('product_view', 'add_to_cart')
        AND nullif(product_item_code, '') IS NOT NULL
    GROUP BY product_item_code
),
product_codes AS (
    -- Each code once, with its product's id (one SHA-1 per code, not per line).
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (SELECT code FROM lines WHERE code IS NOT NULL UNION SELECT code FROM activity)
),
sales AS (
    SELECT coalesce(c.product_id, l.line_product_id) AS product_id, l.currency,
        sum(l.quantity * l.price) AS revenue, count(DISTINCT l.order_id) AS orders, sum(l.quantity) AS units
    FROM lines AS l
    LEFT JOIN product_codes AS c USING (code)
    WHERE coalesce(c.product_id, l.line_product_id) IS NOT NULL
    GROUP BY ALL
),
ranked AS (
    SELECT s.*, c.code, row_number() OVER (
            PARTITION BY s.currency
            ORDER BY CASE $sort_by WHEN 'units' THEN s.units::DECIMAL(38, 6)
                WHEN 'orders' THEN s.orders::DECIMAL(38, 6) ELSE s.revenue::DECIMAL(38, 6) END DESC,
                c.code NULLS LAST, s.product_id
        ) AS rank
    FROM sales AS s
    LEFT JOIN product_codes AS c USING (product_id)
)
SELECT r.currency, r.rank, r.product_id, r.code, r.revenue, r.orders, r.units,
    coalesce(a.views, 0) AS views, coalesce(a.add_to_carts, 0) AS add_to_carts
FROM ranked AS r
LEFT JOIN activity AS a USING (code)
WHERE r.rank <= $limit
ORDER BY r.currency, r.rank
