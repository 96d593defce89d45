-- Per consent group: people, their events in the range, converters (people with a sale, i.e. an
-- order that is not a refund, or a `purchase` event naming no sale of the site, in the range) and
-- sales (orders, refunds apart). A purchase event naming a sale (of any date) is that sale, its
-- buyer the order's person, as the overview, funnels and correlations count it: a forwarded
-- thank-you page made its opener a converter here, and a reloaded one a converter of the day after.
WITH person_events AS (
    SELECT person_id, count(*) AS events,
        bool_or(name = 'purchase' AND NOT names_a_sale(site_id, metadata)) AS purchased
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
    GROUP BY person_id
),
person_orders AS (
    SELECT person_id, count(*) AS orders
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    GROUP BY person_id
)
SELECT g.consent_group,
    count(*) AS people,
    coalesce(sum(e.events), 0) AS events,
    count(*) FILTER (WHERE coalesce(e.purchased, false) OR coalesce(o.orders, 0) > 0) AS converters,
    coalesce(sum(o.orders), 0) AS orders
FROM consent_groups AS g
LEFT JOIN person_events AS e USING (person_id)
LEFT JOIN person_orders AS o USING (person_id)
GROUP BY g.consent_group
