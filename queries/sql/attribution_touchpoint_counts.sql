-- Impressions and clicks of campaigns, widgets and recommendations in [$range_start, $range_end), per
-- entity: events named in $impression_names / $click_names whose entity type is in $entity_types
-- (compared in lower case) and whose entity id is set; `people` who saw or clicked it.
-- $entity_type / $entity_id (NULL: any) narrow to one entity or one kind.
WITH touchpoints AS (
    SELECT person_id, lower(entity_type) AS entity_type, entity_id,
        list_contains($impression_names, name) AS is_impression,
        list_contains($click_names, name) AS is_click
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
        AND (list_contains($impression_names, name) OR list_contains($click_names, name))
        AND list_contains($entity_types, lower(entity_type))
        AND entity_id IS NOT NULL AND entity_id <> ''
)
SELECT entity_type, entity_id,
    count(*) FILTER (WHERE is_impression) AS impressions,
    count(*) FILTER (WHERE is_click) AS clicks,
    count(DISTINCT person_id) AS people
FROM touchpoints
WHERE ($entity_type IS NULL OR entity_type = $entity_type) AND ($entity_id IS NULL OR entity_id = $entity_id)
GROUP BY entity_type, entity_id
ORDER BY entity_type, entity_id
