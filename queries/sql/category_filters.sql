-- Filter uses of `category_events` (category_filter events): the filter is metadata.filterName, else
-- filterType, else filter ('unknown' when none); its value metadata.filterValue, else value (may be
-- null). An empty text names nothing, as a null does: `filterName: ""` beside `filterType: "price"` is
-- the price filter, not one named ''. Per filter and value: uses, distinct people and distinct
-- categories; `total_uses` counts every use, also of the rows past $limit.
WITH uses AS (
    SELECT person_id, category_path,
        coalesce(
            nullif(json_extract_string(filter_metadata, '$.filterName'), ''),
            nullif(json_extract_string(filter_metadata, '$.filterType'), ''),
            nullif(json_extract_string(filter_metadata, '$.filter'), ''),
            'unknown'
        ) AS filter,
        coalesce(
            nullif(json_extract_string(filter_metadata, '$.filterValue'), ''),
            nullif(json_extract_string(filter_metadata, '$.value'), '')
        ) AS value
    FROM category_events
    WHERE name = 'category_filter'
)
SELECT filter, value, count(*) AS uses, count(DISTINCT person_id) AS people,
    count(DISTINCT category_path) AS categories, sum(count(*)) OVER () AS total_uses
FROM uses
GROUP BY filter, value
ORDER BY uses DESC, filter, value NULLS FIRST
LIMIT $limit
