-- The sales counted in one journey (see journey_stream), in time order.
SELECT o.order_id, o.ts, o.currency, o.total, o.item_count
FROM journey_stream AS s
JOIN orders AS o ON o.site_id = $site_id AND o.order_id = s.id
WHERE s.source = 'order'
ORDER BY o.ts, o.order_id
