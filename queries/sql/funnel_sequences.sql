-- The time-ordered events of every person who entered the funnel (did step 1 inside the entry
-- range), up to the end of the conversion window. Orders count as `purchase` events of their
-- person at their time; a `purchase` event carrying an order's id is that same purchase, once.
WITH site_events AS (
    SELECT person_id, ts, name, event_id AS id, json_extract_string(metadata, '$.orderId') AS order_ref
    FROM events_people
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
),
order_purchases AS (
    SELECT person_id, ts, 'purchase' AS name, order_id AS id
    FROM orders_people
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
),
funnel_events AS (
    SELECT person_id, ts, name, id FROM site_events
    WHERE name <> 'purchase' OR order_ref IS NULL OR order_ref NOT IN (SELECT id FROM order_purchases)
    UNION ALL
    SELECT person_id, ts, name, id FROM order_purchases
),
entered AS (
    SELECT DISTINCT person_id FROM funnel_events
    WHERE name = $first_step AND ts >= $entry_start AND ts < $entry_end
),
final AS (
    SELECT f.person_id, epoch_us(f.ts) AS ts_us, f.name, f.id
    FROM funnel_events AS f
    SEMI JOIN entered AS e ON e.person_id = f.person_id
    WHERE f.ts >= $entry_start AND f.ts <= $scan_end_ts
      AND ($all_names OR list_contains($step_names, f.name))
)
SELECT person_id, ts_us, name FROM final ORDER BY person_id, ts_us, id
