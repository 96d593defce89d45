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
-- Only sessions with an add_to_cart need their checkouts; the purchase events' metadata is read for
-- those alone.
purchase_events AS (
    SELECT e.visitor_id, e.session_id, e.ts, e.metadata
    FROM events AS e
    SEMI JOIN sessions AS s ON s.visitor_id = e.visitor_id AND s.session_id = e.session_id
    WHERE e.site_id = $site_id AND e.date BETWEEN $scan_start AND $scan_end AND e.name = 'purchase'
),
checkouts AS (
    SELECT c.visitor_id, c.session_id, c.ts
    FROM sales AS c
    SEMI JOIN sessions AS s ON s.visitor_id = c.visitor_id AND s.session_id = c.session_id
    UNION ALL
    SELECT visitor_id, session_id, ts
    FROM purchase_events
    WHERE coalesce(json_extract_string(metadata, '$.orderId') NOT IN (SELECT order_id FROM sales), true)
),
numbered AS (
    SELECT visitor_id, session_id, ts,
        row_number() OVER (PARTITION BY visitor_id, session_id ORDER BY ts) AS cart
    FROM checkouts
)
SELECT DISTINCT hash(a.visitor_id, a.session_id, coalesce(n.cart, 0)) AS basket, a.code
FROM adds AS a
ASOF LEFT JOIN numbered AS n
    ON n.visitor_id = a.visitor_id AND n.session_id = a.session_id AND a.ts > n.ts
