-- The category and product events of one site in the range, as the temporary table `category_events`
-- of the cursor: each with its person, session, time, id, name, product code and name, and normalised
-- category path (parts joined by ' > '; 'unknown' when the event names none), restricted to the subtree
-- of $category_path when it is not null (the path itself and every path below it).
CREATE OR REPLACE TEMP TABLE category_events AS
WITH scoped AS (
    SELECT person_id, session_id, ts, event_id, name, product_item_code,
        CASE WHEN name = 'category_filter' THEN metadata END AS filter_metadata,
        -- The product's name: metadata.name, else productName; an empty one names nothing (as in the
        -- catalog and tracking status), so `name: ""` does not hide an earlier name or a productName.
        CASE WHEN product_item_code IS NOT NULL THEN coalesce(
            nullif(json_extract_string(metadata, '$.name'), ''),
            nullif(json_extract_string(metadata, '$.productName'), '')
        ) END AS product_name,
        category_path_of(category_path) AS category_path
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end
      AND name IN ('category_view', 'category_filter', 'product_view', 'product_click', 'add_to_cart')
)
SELECT * FROM scoped
WHERE $category_path IS NULL OR category_path = $category_path
   OR starts_with(category_path, $category_path || ' > ')
