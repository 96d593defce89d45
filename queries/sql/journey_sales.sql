-- Every sale of a site (refunds apart) with the journey it belongs to. A sale joins the journey of
-- its journey_id when some event is in it; without one, the journey of its own person's first purchase
-- event naming it (with that event's page); else the journey its visitor's session was in at the
-- order's time (its latest event at or before the order, else the session's first event). Events at
-- one instant are ordered by event id, as the timeline orders them, so ties never depend on the order
-- rows were stored in. A sale no event places is a journey of its own: its journey_id, else its
-- session id (a checkout tracked only server-side is still a converted journey).
CREATE OR REPLACE TEMP TABLE journey_sales AS
WITH named_journeys AS (
    SELECT DISTINCT coalesce(nullif(journey_id, ''), session_id) AS journey_key
    FROM events
    WHERE site_id = $site_id AND coalesce(nullif(journey_id, ''), session_id) IN (
        SELECT journey_id FROM orders WHERE site_id = $site_id AND NOT is_refund AND nullif(journey_id, '') IS NOT NULL
    )
),
sales AS (
    SELECT order_id, person_id, visitor_id, session_id, nullif(journey_id, '') AS own_journey,
        CASE WHEN journey_id IN (SELECT journey_key FROM named_journeys) THEN journey_id END AS journey_id,
        ts, currency, total
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND NOT is_refund
),
purchase_refs AS (
    -- Only the order's own person's purchase events place it: a forwarded thank-you page opened by
    -- someone else names the order too. The first one gives both the journey and the page (a later
    -- reload's page would belong to another event, perhaps of another journey).
    SELECT s.order_id, coalesce(nullif(e.journey_id, ''), e.session_id) AS journey_key, e.url
    FROM events_people_in([$site_id]) AS e
    JOIN sales AS s ON s.order_id = json_extract_string(e.metadata, '$.orderId') AND s.person_id = e.person_id
    WHERE e.site_id = $site_id AND e.name = 'purchase'
    QUALIFY row_number() OVER (PARTITION BY s.order_id ORDER BY e.ts, e.event_id) = 1
),
unplaced AS (
    SELECT s.* FROM sales AS s
    ANTI JOIN purchase_refs AS p USING (order_id)
    WHERE s.journey_id IS NULL
),
session_events AS (
    SELECT e.visitor_id, e.session_id, e.ts, e.event_id,
        coalesce(nullif(e.journey_id, ''), e.session_id) AS journey_key
    FROM events AS e
    SEMI JOIN unplaced AS u ON u.visitor_id = e.visitor_id AND u.session_id = e.session_id
    WHERE e.site_id = $site_id
),
by_session AS (
    SELECT u.order_id, coalesce(
        arg_max(a.journey_key, (a.ts, a.event_id)) FILTER (WHERE a.ts <= u.ts),
        arg_min(a.journey_key, (a.ts, a.event_id))
    ) AS journey_key
    FROM unplaced AS u
    JOIN session_events AS a ON a.visitor_id = u.visitor_id AND a.session_id = u.session_id
    GROUP BY u.order_id
)
SELECT s.order_id, s.person_id, s.visitor_id, s.ts, s.currency, s.total, p.url,
    coalesce(s.journey_id, p.journey_key, b.journey_key, s.own_journey, s.session_id) AS journey_key
FROM sales AS s
LEFT JOIN purchase_refs AS p USING (order_id)
LEFT JOIN by_session AS b USING (order_id)
