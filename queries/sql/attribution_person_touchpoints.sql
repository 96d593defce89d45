-- One person's touchpoints before a conversion: impressions and clicks ($touch_names) of campaigns,
-- widgets and recommendations ($entity_types, compared in lower case, with an entity id) in
-- [$touch_start, $conversion_at), in time order, then event id order (the order the models credit).
-- People as in events_people, but only the links that can matter are read: visitors linked to the
-- person, and the link of the visitor whose id the person has (an anonymous person is its visitor).
WITH links AS MATERIALIZED (
    SELECT visitor_id, user_id FROM visitor_users_in([$site_id])
    WHERE site_id = $site_id AND (user_id = $person_id OR visitor_id = $person_id)
),
candidates AS (
    SELECT event_id, name, entity_type, entity_id, ts, visitor_id, user_id
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $touch_start AND ts < $conversion_at
        AND list_contains($touch_names, name) AND list_contains($entity_types, lower(entity_type))
        AND entity_id IS NOT NULL AND entity_id <> ''
        AND (user_id = $person_id OR visitor_id = $person_id OR visitor_id IN (SELECT visitor_id FROM links))
),
final AS (
    SELECT c.*, person_of(l.user_id, c.user_id, c.visitor_id) AS person_id
    FROM candidates AS c
    LEFT JOIN links AS l ON l.visitor_id = c.visitor_id
)
SELECT event_id, name, lower(entity_type) AS entity_type, entity_id, ts,
    list_contains($click_names, name) AS is_click
FROM final
WHERE person_id = $person_id
ORDER BY ts, event_id
