-- The events a funnel needs, as two integers each, grouped by person and in time order: the person
-- as a 64-bit hash of its id, and the event as its time (epoch µs) times $code_span plus its code,
-- the 1-based position of its name in $step_names (0 for any other event, kept only when
-- $all_names, for strict order). So events at the same microsecond sort in step order, other
-- events first, as ClickHouse's windowFunnel sorts them. Orders count as `purchase` events of their
-- person at their time; a `purchase` event carrying an order's id is that same purchase, once.
WITH site_events AS (
    SELECT person_id, ts, name,
        CASE WHEN name = 'purchase' THEN json_extract_string(metadata, '$.orderId') END AS order_ref
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
),
order_purchases AS (
    SELECT person_id, ts, 'purchase' AS name, order_id
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
),
funnel_events AS (
    SELECT person_id, ts, name FROM site_events
    -- Against every sale of the site, not only the range's: an earlier order is still not this person's.
    WHERE order_ref IS NULL OR NOT is_a_sale($site_id, order_ref)
    UNION ALL
    SELECT person_id, ts, name FROM order_purchases
),
coded AS (
    SELECT person_id, ts, coalesce(list_position($step_names, name), 0) AS code
    FROM funnel_events
    WHERE ts >= $entry_start AND ts <= $scan_end_ts
),
final AS (
    SELECT hash(person_id) AS person_key, epoch_us(ts) * $code_span + code AS event_key
    FROM coded
    WHERE $all_names OR code > 0
)
SELECT person_key, event_key FROM final ORDER BY person_key, event_key
