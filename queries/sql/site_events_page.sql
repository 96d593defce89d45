-- One page of a site's events, newest first, optionally of one name.
SELECT event_id, name, ts, visitor_id, session_id, journey_id, user_id, url, entity_type, entity_id,
    product_item_code, category_path, metadata, channel, count(*) OVER () AS total
FROM events
WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
  AND ($name IS NULL OR name = $name)
  AND ($source IS NULL OR json_extract_string(metadata, '$.source') = $source)
ORDER BY ts DESC, event_id
LIMIT $limit OFFSET $offset
