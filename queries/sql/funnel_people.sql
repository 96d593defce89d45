-- The ids behind the person hashes of `funnel_events`: everyone with a step-1 event in the entry
-- range (an order is a `purchase`).
WITH starts AS (
    SELECT person_id FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND name = $first_step AND ts >= $entry_start AND ts < $entry_end
    UNION ALL
    SELECT person_id FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
      AND $first_step = 'purchase' AND ts >= $entry_start AND ts < $entry_end
)
SELECT DISTINCT hash(person_id) AS person_key, person_id FROM starts
