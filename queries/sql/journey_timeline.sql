-- Every event of one journey as recorded, in time order (a purchase event for an order included).
SELECT event_id, name, ts, url, entity_type, entity_id, product_item_code, category_path, metadata
FROM events
WHERE site_id = $site_id AND coalesce(nullif(journey_id, ''), session_id) = $journey_key
ORDER BY ts, event_id
