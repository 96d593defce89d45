-- An order by id among a set of sites (at most two rows), with its person and money.
SELECT site_id, order_id, ts, person_id, currency, total, is_refund
FROM orders_people
WHERE list_contains($site_ids, site_id) AND order_id = $order_id
ORDER BY site_id
LIMIT 2
