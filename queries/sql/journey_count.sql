-- How many journeys of `journey_summary` match the list filter (for paging).
SELECT count(*) AS total
FROM journey_summary
WHERE $converted IS NULL OR converted = $converted
