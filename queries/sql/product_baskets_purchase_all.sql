-- Baskets for source=purchase, mode=all: everything one person (the linked user, else the visitor)
-- bought in the range, refunds apart. Each line with its code, or without one its productId;
-- `product_baskets_purchase.sql` makes products of them.
SELECT hash(person_id) AS basket, code, CASE WHEN code IS NULL THEN line_product_id END AS line_product_id
FROM (
    SELECT person_id, nullif(item.product_item_code, '') AS code, item.product_id AS line_product_id,
        item.quantity
    FROM (
        SELECT person_id, unnest(items) AS item
        FROM orders_people_in([$site_id])
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
)
WHERE quantity > 0 AND coalesce(code, line_product_id) IS NOT NULL
