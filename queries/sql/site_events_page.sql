-- One page of a site's events, newest first, optionally of one name or `metadata.source`. `total`
-- counts every match, also when the page lies past the last match (its one row then has no event).
WITH matches AS (
    SELECT event_id, name, ts, visitor_id, session_id, journey_id, user_id, url, entity_type, entity_id,
        product_item_code, category_path, metadata, channel
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
      AND ($name IS NULL OR name = $name)
      AND ($source IS NULL OR json_extract_string(metadata, '$.source') = $source)
),
page AS (
    SELECT * FROM matches ORDER BY ts DESC, event_id LIMIT $limit OFFSET $offset
)
SELECT page.*, (SELECT count(*) FROM matches) AS total
FROM (SELECT 1) AS always
LEFT JOIN page ON true
ORDER BY page.ts DESC, page.event_id
