-- One person's touchpoints before a conversion: impressions and clicks ($touch_names) of campaigns,
-- widgets and recommendations ($entity_types, compared in lower case, with an entity id) in
-- [$touch_start, $conversion_at), in time order, then event id order (the order the models credit).
SELECT event_id, name, lower(entity_type) AS entity_type, entity_id, ts,
    list_contains($click_names, name) AS is_click
FROM events_people
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $touch_start AND ts < $conversion_at AND person_id = $person_id
    AND list_contains($touch_names, name) AND list_contains($entity_types, lower(entity_type))
    AND entity_id IS NOT NULL AND entity_id <> ''
ORDER BY ts, event_id
