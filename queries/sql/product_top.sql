-- The best-selling products of each currency in the range (refunds apart): line revenue (quantity
-- times unit price), sales holding the product and units, ranked within the currency by $sort_by
-- (revenue, units or orders; ties by code); at most $limit per currency. Views and add-to-carts of the
-- product in the range ride along (the same on each currency row of a product).
WITH lines AS (
    SELECT order_id, currency, coalesce(nullif(item.product_item_code, ''), item.product_id) AS code,
        item.quantity AS quantity, item.price AS price
    FROM (
        SELECT order_id, currency, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
            AND ($currency IS NULL OR currency = $currency)
    )
),
sales AS (
    SELECT code, currency, sum(quantity * price) AS revenue, count(DISTINCT order_id) AS orders,
        sum(quantity) AS units
    FROM lines
    WHERE nullif(code, '') IS NOT NULL
    GROUP BY code, currency
),
ranked AS (
    SELECT *, row_number() OVER (
            PARTITION BY currency
            ORDER BY CASE $sort_by WHEN 'units' THEN units::DECIMAL(38, 6) WHEN 'orders' THEN orders::DECIMAL(38, 6)
                ELSE revenue::DECIMAL(38, 6) END DESC, code
        ) AS rank
    FROM sales
),
top AS (SELECT * FROM ranked WHERE rank <= $limit),
activity AS (
    SELECT product_item_code AS code, count(*) FILTER (WHERE name = 'product_view') AS views,
        count(*) FILTER (WHERE name = 'add_to_cart') AS add_to_carts
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND name IN ('product_view', 'add_to_cart')
        AND product_item_code IN (SELECT code FROM top)
    GROUP BY product_item_code
)
SELECT t.currency, t.rank, t.code, t.revenue, t.orders, t.units,
    coalesce(a.views, 0) AS views, coalesce(a.add_to_carts, 0) AS add_to_carts
FROM top AS t
LEFT JOIN activity AS a USING (code)
ORDER BY t.currency, t.rank
