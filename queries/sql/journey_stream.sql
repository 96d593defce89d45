-- The entries of every journey in `journey_keys`, numbered in time order: its events, and each sale
-- (refunds apart) as a `purchase` at the order's time. A `purchase` event whose metadata.orderId names
-- a sale is that sale, counted once (as the order, with that event's page; another person's event
-- naming it is dropped, as funnels drop it). A sale joins the journey of its journey_id (when some
-- event is in it); without one, the journey of its own person's purchase event naming it; else the
-- journey its visitor's session was in at the order's time (its latest event at or before the order,
-- else the session's first event).
-- No journey in `journey_keys` has an event in a partition before $scan_from.
CREATE OR REPLACE TEMP TABLE journey_stream AS
WITH journey_events AS (
    SELECT k.journey_key, e.event_id, e.person_id, e.visitor_id, e.ts, e.name, e.url,
        CASE WHEN e.name = 'purchase' THEN json_extract_string(e.metadata, '$.orderId') END AS order_ref
    FROM events_people AS e
    JOIN journey_keys AS k ON k.journey_key = coalesce(nullif(e.journey_id, ''), e.session_id)
    WHERE e.site_id = $site_id AND e.date >= $scan_from
),
named_journeys AS (
    -- The journeys sales name that some event is in: a sale naming a journey no event has is placed
    -- as a sale without one (else it would be in no journey at all).
    SELECT DISTINCT coalesce(nullif(journey_id, ''), session_id) AS journey_key
    FROM events
    WHERE site_id = $site_id AND coalesce(nullif(journey_id, ''), session_id) IN (
        SELECT journey_id FROM orders WHERE site_id = $site_id AND NOT is_refund AND nullif(journey_id, '') IS NOT NULL
    )
),
sales AS (
    SELECT order_id, person_id, visitor_id, session_id,
        CASE WHEN journey_id IN (SELECT journey_key FROM named_journeys) THEN journey_id END AS journey_id,
        ts, currency, total
    FROM orders_people
    WHERE site_id = $site_id AND NOT is_refund
),
purchase_refs AS (
    -- Only the order's own person's purchase events place it: a forwarded thank-you page opened by
    -- someone else names the order too.
    SELECT s.order_id,
        arg_min(coalesce(nullif(e.journey_id, ''), e.session_id), e.ts) AS journey_key,
        arg_min(e.url, e.ts) AS url
    FROM events_people AS e
    JOIN sales AS s ON s.order_id = json_extract_string(e.metadata, '$.orderId') AND s.person_id = e.person_id
    WHERE e.site_id = $site_id AND e.name = 'purchase'
    GROUP BY s.order_id
),
unplaced AS (
    SELECT s.* FROM sales AS s
    ANTI JOIN purchase_refs AS p USING (order_id)
    WHERE s.journey_id IS NULL
),
session_events AS (
    SELECT e.visitor_id, e.session_id, e.ts, coalesce(nullif(e.journey_id, ''), e.session_id) AS journey_key
    FROM events AS e
    SEMI JOIN unplaced AS u ON u.visitor_id = e.visitor_id AND u.session_id = e.session_id
    WHERE e.site_id = $site_id
),
session_first AS (
    SELECT visitor_id, session_id, arg_min(journey_key, ts) AS journey_key
    FROM session_events
    GROUP BY visitor_id, session_id
),
by_session AS (
    SELECT u.order_id, coalesce(a.journey_key, f.journey_key) AS journey_key
    FROM unplaced AS u
    ASOF LEFT JOIN session_events AS a
        ON a.visitor_id = u.visitor_id AND a.session_id = u.session_id AND u.ts >= a.ts
    LEFT JOIN session_first AS f ON f.visitor_id = u.visitor_id AND f.session_id = u.session_id
),
placed_sales AS (
    SELECT s.*, coalesce(s.journey_id, p.journey_key, b.journey_key, s.session_id) AS journey_key, p.url
    FROM sales AS s
    LEFT JOIN purchase_refs AS p USING (order_id)
    LEFT JOIN by_session AS b USING (order_id)
),
entries AS (
    SELECT journey_key, 'event' AS source, event_id AS id, person_id, visitor_id, ts, name, url,
        NULL::VARCHAR AS currency, NULL::DECIMAL(24, 6) AS amount
    FROM journey_events
    WHERE order_ref IS NULL OR order_ref NOT IN (SELECT order_id FROM sales)
    UNION ALL
    SELECT s.journey_key, 'order' AS source, s.order_id AS id, s.person_id, s.visitor_id, s.ts,
        'purchase' AS name, s.url, s.currency, s.total AS amount
    FROM placed_sales AS s
    SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
),
final AS (
    SELECT *, row_number() OVER (PARTITION BY journey_key ORDER BY ts, source, id) AS seq
    FROM entries
)
SELECT * FROM final
