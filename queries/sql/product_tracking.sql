-- How product tracking looks in the range: per product event name, the events, the products they name,
-- the last one, and how many carry a name, a price and a category (metadata or the event's category).
-- An empty name or category is none: it gives the catalog nothing.
SELECT name,
    count(*) AS events,
    count(DISTINCT product_item_code) AS products,
    max(ts) AS last_at,
    count(*) FILTER (WHERE coalesce(nullif(json_extract_string(metadata, '$.name'), ''),
        nullif(json_extract_string(metadata, '$.productName'), '')) IS NOT NULL) AS with_name,
    count(*) FILTER (WHERE TRY_CAST(json_extract_string(metadata, '$.price') AS DECIMAL(24, 6)) IS NOT NULL)
        AS with_price,
    count(*) FILTER (WHERE coalesce(nullif(category_path, ''),
        nullif(json_extract_string(metadata, '$.categoryPath'), '')) IS NOT NULL) AS with_category
FROM events
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end AND list_contains($product_events, name)
GROUP BY name
ORDER BY name
