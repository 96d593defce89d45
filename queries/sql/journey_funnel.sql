-- Journeys of `journey_stream` that contain each of $stages (in any order), one row per stage name.
WITH contained AS (
    SELECT DISTINCT journey_key, name
    FROM journey_stream($site_id, $scan_from)
    WHERE list_contains($stages, name)
)
SELECT name, count(*) AS journeys
FROM contained
GROUP BY name
