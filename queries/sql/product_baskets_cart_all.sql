-- Baskets for source=cart, mode=all: the products one person (the linked user, else the visitor)
-- added to cart in the range.
SELECT DISTINCT hash(person_id) AS basket, product_item_code AS product_key, false AS id_only
FROM events_people_in([$site_id])
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end
    AND name = 'add_to_cart' AND nullif(product_item_code, '') IS NOT NULL
