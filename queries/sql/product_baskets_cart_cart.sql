-- Baskets for source=cart, mode=cart: the products added to one cart. A cart is the add_to_cart events
-- of one session (a visitor's session id) between checkouts: a sale of that session, or a purchase
-- event not naming a sale, closes the cart, and the next add_to_cart (strictly later) opens a new one.
-- Sessions are keyed by a 64-bit hash of (visitor, session): joins and groups on one integer, not two
-- strings; one scan reads both the add_to_cart and the purchase events.
WITH scanned AS (
    SELECT hash(visitor_id, session_id) AS session_key, name, ts, product_item_code AS code,
        CASE WHEN name = 'purchase' THEN metadata END AS metadata
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND (name = 'add_to_cart' OR name = 'purchase')
),
adds AS (
    SELECT session_key, ts, code
    FROM scanned
    WHERE name = 'add_to_cart' AND ts >= $range_start AND ts < $range_end AND nullif(code, '') IS NOT NULL
),
sessions AS (
    SELECT DISTINCT session_key FROM adds
),
sales AS (
    SELECT order_id, hash(visitor_id, session_id) AS session_key, ts
    FROM orders
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
),
-- Only sessions with an add_to_cart need their checkouts; the purchase events' metadata is read for
-- those alone.
checkouts AS (
    SELECT c.session_key, c.ts
    FROM sales AS c
    SEMI JOIN sessions AS s ON s.session_key = c.session_key
    UNION ALL
    SELECT p.session_key, p.ts
    FROM scanned AS p
    SEMI JOIN sessions AS s ON s.session_key = p.session_key
    WHERE p.name = 'purchase'
        AND coalesce(json_extract_string(p.metadata, '$.orderId') NOT IN (SELECT order_id FROM sales), true)
),
numbered AS (
    SELECT session_key, ts, row_number() OVER (PARTITION BY session_key ORDER BY ts) AS cart
    FROM checkouts
)
SELECT DISTINCT hash(a.session_key, coalesce(n.cart, 0)) AS basket, a.code
FROM adds AS a
ASOF LEFT JOIN numbered AS n ON n.session_key = a.session_key AND a.ts > n.ts
