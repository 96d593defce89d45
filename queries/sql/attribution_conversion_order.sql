-- A sale (not a refund) by order id among a set of sites (at most two rows), with its person (as in
-- orders_people) and money.
WITH found AS (
    SELECT site_id, order_id, ts, visitor_id, user_id, currency, total
    FROM orders
    WHERE list_contains($site_ids, site_id) AND order_id = $order_id AND NOT is_refund
    ORDER BY site_id
    LIMIT 2
)
SELECT f.site_id, f.order_id, f.ts, f.currency, f.total,
    person_of(l.user_id, f.user_id, f.visitor_id) AS person_id
FROM found AS f
LEFT JOIN visitor_users_in($site_ids) AS l ON l.site_id = f.site_id AND l.visitor_id = f.visitor_id
ORDER BY f.site_id
