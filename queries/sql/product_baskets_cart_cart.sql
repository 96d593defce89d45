-- Baskets for source=cart, mode=cart: the products added to one cart. A cart is the add_to_cart events
-- of one session (a visitor's session id) between checkouts: a sale of that session, or a purchase
-- event not naming a sale, closes the cart, and the next add_to_cart (strictly later) opens a new one.
WITH adds AS (
    SELECT visitor_id, session_id, ts, product_item_code AS code
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
        AND name = 'add_to_cart' AND nullif(product_item_code, '') IS NOT NULL
),
sessions AS (
    SELECT DISTINCT visitor_id, session_id FROM adds
),
sales AS (
    SELECT order_id, visitor_id, session_id, ts
    FROM orders
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
),
checkouts AS (
    SELECT visitor_id, session_id, ts FROM sales
    UNION ALL
    SELECT visitor_id, session_id, ts
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND name = 'purchase'
        AND coalesce(json_extract_string(metadata, '$.orderId') NOT IN (SELECT order_id FROM sales), true)
),
numbered AS (
    SELECT c.visitor_id, c.session_id, c.ts,
        row_number() OVER (PARTITION BY c.visitor_id, c.session_id ORDER BY c.ts) AS cart
    FROM checkouts AS c
    SEMI JOIN sessions AS s ON s.visitor_id = c.visitor_id AND s.session_id = c.session_id
)
SELECT DISTINCT hash(a.visitor_id, a.session_id, coalesce(n.cart, 0)) AS basket, a.code
FROM adds AS a
ASOF LEFT JOIN numbered AS n
    ON n.visitor_id = a.visitor_id AND n.session_id = a.session_id AND a.ts > n.ts
