-- Baskets for source=purchase, every mode: the products on the lines (quantity above 0) of the sales in
-- the range, refunds apart. Reads `keyed_orders`: the orders with their basket's key as `basket` (the
-- sale, its session or its person), put before it by `queries/products.py` for the mode. Answers the
-- distinct (basket, product_key, id_only) lines `product_associations.sql` reads: each line with its
-- code, or without one its productId; a line without a code is the product of the code deriving to its
-- productId (`product_id_of`) when a line here carries that code, else a product known only by that
-- productId (`id_only`, keyed by it). Codes are hashed only when some line has no code, once per
-- distinct code.
WITH order_lines AS MATERIALIZED (
    SELECT basket, code, CASE WHEN code IS NULL THEN line_product_id END AS line_product_id
    FROM (
        SELECT basket, nullif(item.product_item_code, '') AS code, item.product_id AS line_product_id,
            item.quantity
        FROM (
            SELECT basket, unnest(items) AS item
            FROM keyed_orders
            WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
                AND ts >= $range_start AND ts < $range_end AND NOT is_refund
        )
    )
    WHERE quantity > 0 AND coalesce(code, line_product_id) IS NOT NULL
),
product_codes AS (
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (
        SELECT DISTINCT code FROM order_lines
        WHERE code IS NOT NULL AND EXISTS (SELECT 1 FROM order_lines WHERE code IS NULL)
    )
)
SELECT DISTINCT l.basket, coalesce(l.code, c.code, l.line_product_id) AS product_key,
    l.code IS NULL AND c.code IS NULL AS id_only
FROM order_lines AS l
LEFT JOIN product_codes AS c ON c.product_id = l.line_product_id
