-- Baskets for source=cart, mode=cart: the products added to one cart. A cart is the add_to_cart events
-- of one session (a visitor's session id) between checkouts: a sale of that session, or a purchase
-- event not naming a sale, closes the cart, and the next add_to_cart (strictly later) opens a new one.
-- Adds and checkouts come in one scan and one list; an add's cart is the number of its session's
-- checkouts before it, a running count (at the same instant the add comes first: a checkout closes
-- the cart that holds the adds of its instant). Sessions are keyed by a 64-bit hash of (visitor,
-- session): sorts and groups on one integer, not two strings.
WITH sales AS (
    SELECT order_id, hash(visitor_id, session_id) AS session_key, ts
    FROM orders
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
),
marks AS (
    SELECT hash(visitor_id, session_id) AS session_key, ts,
        CASE WHEN name = 'add_to_cart' THEN product_item_code END AS code,
        (name = 'purchase')::TINYINT AS closes
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ((name = 'add_to_cart' AND ts >= $range_start AND ts < $range_end
                AND nullif(product_item_code, '') IS NOT NULL)
            OR (name = 'purchase'
                AND NOT coalesce(names_a_sale(site_id, metadata), false)))
    UNION ALL
    SELECT session_key, ts, NULL, 1 FROM sales
),
carts AS (
    SELECT session_key, code, closes,
        sum(closes) OVER (PARTITION BY session_key ORDER BY ts, closes ROWS UNBOUNDED PRECEDING) AS cart
    FROM marks
)
SELECT DISTINCT hash(session_key, cart) AS basket, code AS product_key, false AS id_only
FROM carts
WHERE closes = 0
