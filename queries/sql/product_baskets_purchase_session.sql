-- Baskets for source=purchase, mode=session: the products bought in the sales of one session (a
-- visitor's session id) in the range, refunds apart. Each line with its code, or without one its
-- productId; `product_baskets_purchase.sql` makes products of them.
SELECT hash(visitor_id, session_id) AS basket, code, CASE WHEN code IS NULL THEN line_product_id END AS line_product_id
FROM (
    SELECT visitor_id, session_id, nullif(item.product_item_code, '') AS code,
        item.product_id AS line_product_id, item.quantity
    FROM (
        SELECT visitor_id, session_id, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
)
WHERE quantity > 0 AND coalesce(code, line_product_id) IS NOT NULL
