-- The entries of every journey in `journey_keys`, numbered in time order: its events, and each sale
-- (refunds apart) as a `purchase` at the order's time, in the journey `journey_sales` placed it in. A
-- `purchase` event whose metadata.orderId names a sale is that sale, counted once (as the order, with
-- that event's page; another person's event naming it is dropped, as funnels drop it).
-- No journey in `journey_keys` has an entry in a partition before $scan_from. Entries at one instant:
-- events before sales, each by id.
CREATE OR REPLACE TEMP TABLE journey_stream AS
WITH journey_events AS (
    SELECT k.journey_key, e.event_id, e.person_id, e.visitor_id, e.ts, e.name, e.url,
        CASE WHEN e.name = 'purchase' THEN json_extract_string(e.metadata, '$.orderId') END AS order_ref
    FROM events_people AS e
    JOIN journey_keys AS k ON k.journey_key = coalesce(nullif(e.journey_id, ''), e.session_id)
    WHERE e.site_id = $site_id AND e.date >= $scan_from
),
entries AS (
    SELECT journey_key, 'event' AS source, event_id AS id, person_id, visitor_id, ts, name, url,
        NULL::VARCHAR AS currency, NULL::DECIMAL(24, 6) AS amount
    FROM journey_events
    WHERE order_ref IS NULL OR order_ref NOT IN (SELECT order_id FROM journey_sales)
    UNION ALL
    SELECT s.journey_key, 'order' AS source, s.order_id AS id, s.person_id, s.visitor_id, s.ts,
        'purchase' AS name, s.url, s.currency, s.total AS amount
    FROM journey_sales AS s
    SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
),
final AS (
    SELECT *, row_number() OVER (PARTITION BY journey_key ORDER BY ts, source, id) AS seq
    FROM entries
)
SELECT * FROM final
