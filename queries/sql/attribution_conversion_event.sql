-- The event asked for by id among a set of sites (at most two rows: a second one means the id is
-- ambiguous), with its person and the order it names, if any (`metadata.orderId`).
SELECT site_id, event_id, name, ts, person_id, json_extract_string(metadata, '$.orderId') AS order_ref
FROM events_people
WHERE list_contains($site_ids, site_id) AND event_id = $event_id
ORDER BY site_id
LIMIT 2
