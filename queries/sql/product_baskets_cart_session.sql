-- Baskets for source=cart, mode=session: the products added to cart in one session (a visitor's
-- session id) in the range, whatever checkouts happened between.
SELECT DISTINCT hash(visitor_id, session_id) AS basket, product_item_code AS product_key, false AS id_only
FROM events
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end
    AND name = 'add_to_cart' AND nullif(product_item_code, '') IS NOT NULL
