-- Sales in the range (refunds apart), their lines that bought something (quantity above 0), the products
-- on them, and how many of those products no product event of the range named (bought, but never seen by
-- the tracker). A product is its productId: a line's code names the product whose id derives from it, a
-- line without one the product its productId names; an event names the product of its code.
WITH lines AS (
    SELECT order_id, nullif(item.product_item_code, '') AS code, item.product_id AS line_product_id,
        item.quantity > 0 AS bought
    FROM (
        SELECT order_id, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
),
tracked AS (
    SELECT DISTINCT product_item_code AS code
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND list_contains($product_events, name)
        AND nullif(product_item_code, '') IS NOT NULL
),
product_codes AS (
    -- Each code once, with its product's id (one SHA-1 per code, not per line).
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (SELECT code FROM lines WHERE code IS NOT NULL AND bought UNION SELECT code FROM tracked)
),
products AS (
    SELECT l.order_id, CASE WHEN l.bought THEN coalesce(c.product_id, l.line_product_id) END AS product_id,
        l.bought
    FROM lines AS l
    LEFT JOIN product_codes AS c USING (code)
)
SELECT count(DISTINCT order_id) AS orders,
    count(*) FILTER (WHERE bought) AS lines,
    count(DISTINCT product_id) AS products,
    count(DISTINCT product_id) FILTER (
        WHERE product_id NOT IN (SELECT product_id FROM tracked JOIN product_codes USING (code))
    ) AS products_never_tracked
FROM products
