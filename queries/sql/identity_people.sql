-- People active in [$range_start, $range_end) (an event or a sale: a refund is the shop's doing, as in
-- the overview), split into identified (the
-- person is a shop user: the visitor was linked to a user id at any time, or the row carries one) and
-- anonymous; `converters` bought in the range (an order that is not a refund, or a purchase event
-- that names no sale: one naming a sale is that sale, its person's). A blank user id ('', ' ') is no
-- user, as in people_views.sql: `nullif(user_id, '')` would take ' ' for one, so a never-linked
-- visitor sending it would be an identified person (and a sale carrying it identified revenue).
WITH activity AS (
    SELECT person_id, user_of(user_id) IS NOT NULL OR person_id <> visitor_id AS identified,
        name = 'purchase' AND NOT names_a_sale(site_id, metadata) AS purchased
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
    UNION ALL
    SELECT person_id, user_of(user_id) IS NOT NULL OR person_id <> visitor_id, TRUE
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end AND NOT is_refund
        AND ts >= $range_start AND ts < $range_end
),
people AS (
    SELECT person_id, bool_or(identified) AS identified, bool_or(purchased) AS converted
    FROM activity
    GROUP BY person_id
)
SELECT identified, count(*) AS people, count(*) FILTER (WHERE converted) AS converters
FROM people
GROUP BY identified
ORDER BY identified DESC
