-- The event asked for by id among a set of sites (at most two rows: a second one means the id is
-- ambiguous), with its person (as in events_people) and the order it names, if any
-- (`metadata.orderId`). The event is found first, so only its visitor's link is looked up.
WITH found AS (
    SELECT site_id, event_id, name, ts, visitor_id, user_id, metadata
    FROM events
    WHERE list_contains($site_ids, site_id) AND event_id = $event_id
    ORDER BY site_id
    LIMIT 2
)
SELECT f.site_id, f.event_id, f.name, f.ts,
    person_of(l.user_id, f.user_id, f.visitor_id) AS person_id,
    json_extract_string(f.metadata, '$.orderId') AS order_ref
FROM found AS f
LEFT JOIN visitor_users_in($site_ids) AS l ON l.site_id = f.site_id AND l.visitor_id = f.visitor_id
ORDER BY f.site_id
