-- The sales counted in one journey (its rows of `journey_sales`, as in journey_stream), in time order.
SELECT o.order_id, o.ts, o.currency, o.total, o.item_count
FROM journey_sales AS s
SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
JOIN orders AS o ON o.site_id = $site_id AND o.order_id = s.order_id
ORDER BY o.ts, o.order_id
