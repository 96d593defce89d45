-- Baskets for source=purchase, mode=cart: every sale in the range (refunds apart) is a basket of the
-- products on its lines (quantity above 0). Each line with its code, or without one its productId;
-- `product_baskets_purchase.sql` makes products of them.
SELECT hash(order_id) AS basket, code, CASE WHEN code IS NULL THEN line_product_id END AS line_product_id
FROM (
    SELECT order_id, nullif(item.product_item_code, '') AS code, item.product_id AS line_product_id,
        item.quantity
    FROM (
        SELECT order_id, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
)
WHERE quantity > 0 AND coalesce(code, line_product_id) IS NOT NULL
