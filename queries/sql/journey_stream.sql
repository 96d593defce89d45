-- The entries of every journey in `journey_keys`: its events, and each sale (refunds apart) as a
-- `purchase` at the order's time, in the journey `journey_sales` placed it in. A `purchase` event
-- whose metadata.orderId names a sale is that sale, counted once (as the order, with that event's
-- page; another person's event naming it is dropped, as funnels drop it). No journey in
-- `journey_keys` has an entry in a partition before `stream_scan_from`. A journey's entries are in
-- the order (ts, source, id): at one instant events before sales, each by id.
-- A table macro, not a table: each report reads the stream once, and storing a month's 10 M entries
-- (and numbering them) costs more than reading the events again. Its sales are the rows of
-- `journey_sales` in `journey_keys`, which readers needing only sales read directly.
CREATE OR REPLACE TEMP MACRO journey_stream(stream_site, stream_scan_from) AS TABLE
WITH journey_events AS (
    SELECT k.journey_key, e.event_id, e.person_id, e.visitor_id, e.ts, e.name, e.url,
        CASE WHEN e.name = 'purchase' THEN json_extract_string(e.metadata, '$.orderId') END AS order_ref
    FROM events_people_in([stream_site]) AS e
    JOIN journey_keys AS k ON k.journey_key = coalesce(nullif(e.journey_id, ''), e.session_id)
    WHERE e.site_id = stream_site AND e.date >= stream_scan_from
),
entries AS (
    SELECT journey_key, 'event' AS source, event_id AS id, person_id, visitor_id, ts, name, url,
        NULL::VARCHAR AS currency, NULL::DECIMAL(24, 6) AS amount
    FROM journey_events
    -- A null id among the sales would make NOT IN unknown for every purchase event, dropping them all.
    WHERE order_ref IS NULL OR order_ref NOT IN (SELECT order_id FROM journey_sales WHERE order_id IS NOT NULL)
    UNION ALL
    SELECT s.journey_key, 'order' AS source, s.order_id AS id, s.person_id, s.visitor_id, s.ts,
        'purchase' AS name, s.url, s.currency, s.total AS amount
    FROM journey_sales AS s
    SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
)
SELECT * FROM entries
