-- The views an ad-hoc query sees: one site's data, read-only. Created per request in a fresh
-- in-memory DuckDB whose `_lake_events`, `_lake_orders` and `_lake_consents` read only that site's
-- Parquet files (queries/adhoc_sql.py). The guard lets a query name these seven views and nothing else.
-- Columns are documented in docs/sql.md; keep the two in step.

-- One row per stored event.
CREATE TEMP VIEW events AS
SELECT event_id, name, ts, received_at, date, visitor_id, session_id, journey_id, user_id,
    entity_type, entity_id, url, referrer, metadata, product_item_code, category_path, currency, value,
    consent_necessary, consent_analytics, consent_marketing, consent_preferences,
    channel, client_platform, client_version
FROM _lake_events;

-- One row per stored order (refunds included, `is_refund` true); `items` is the list of its lines.
CREATE TEMP VIEW orders AS
SELECT order_id, ts, received_at, date, visitor_id, session_id, journey_id, user_id, currency,
    total, subtotal, tax, shipping, discount, is_refund, refund_of, items, item_count,
    consent_necessary, consent_analytics, consent_marketing, consent_preferences,
    channel, client_platform, client_version
FROM _lake_orders;

-- One row per order line, `position` 1-based in the order's list.
CREATE TEMP VIEW order_items AS
WITH lines AS (
    SELECT order_id, ts, date, visitor_id, user_id, currency, is_refund,
        generate_subscripts(items, 1) AS position,
        unnest(items) AS item
    FROM _lake_orders
)
SELECT order_id, position, ts, date, visitor_id, user_id, currency, is_refund,
    item.product_item_code AS product_item_code,
    item.product_id AS product_id,
    item.name AS name,
    item.category_path AS category_path,
    item.quantity AS quantity,
    item.price AS price,
    item.quantity * item.price AS line_total
FROM lines;

-- One row per visitor: the user it was first linked to (on an event or an order, at any time), and
-- the person analytics count it as (that user, else the visitor) - the rule of the people views.
CREATE TEMP VIEW people AS
WITH seen AS (
    -- A blank user id names no user, and at one instant the smaller user id is the link, as in
    -- people_views.sql (a ' ' user and storage-order ties made this view disagree with the routes).
    SELECT visitor_id, CASE WHEN trim(user_id) <> '' THEN user_id END AS user_id, ts FROM _lake_events
    UNION ALL
    SELECT visitor_id, CASE WHEN trim(user_id) <> '' THEN user_id END AS user_id, ts FROM _lake_orders
),
visitors AS (
    SELECT visitor_id,
        arg_min(user_id, (ts, user_id)) FILTER (WHERE user_id IS NOT NULL) AS user_id,
        min(ts) FILTER (WHERE user_id IS NOT NULL) AS linked_at,
        min(ts) AS first_seen_at,
        max(ts) AS last_seen_at
    FROM seen
    WHERE visitor_id IS NOT NULL AND visitor_id <> ''
    GROUP BY visitor_id
)
SELECT visitor_id, user_id, coalesce(user_id, visitor_id) AS person_id, linked_at, first_seen_at, last_seen_at
FROM visitors;

-- One row per session id seen on events: its visitor and person, span, size, entry and exit pages.
CREATE TEMP VIEW sessions AS
WITH spans AS (
    SELECT session_id,
        arg_min(visitor_id, ts) AS visitor_id,
        min(ts) AS started_at,
        max(ts) AS ended_at,
        count(*) AS event_count,
        count(*) FILTER (WHERE name = 'page_view') AS page_views,
        bool_or(name = 'purchase') AS has_purchase,
        arg_min(url, ts) FILTER (WHERE url IS NOT NULL AND url <> '') AS entry_url,
        arg_max(url, ts) FILTER (WHERE url IS NOT NULL AND url <> '') AS exit_url,
        arg_min(referrer, ts) FILTER (WHERE referrer IS NOT NULL AND referrer <> '') AS referrer,
        arg_min(channel, ts) AS channel,
        arg_min(client_platform, ts) AS client_platform
    FROM _lake_events
    WHERE session_id IS NOT NULL AND session_id <> ''
    GROUP BY session_id
)
SELECT s.session_id, s.visitor_id, coalesce(p.person_id, s.visitor_id) AS person_id,
    s.started_at, s.ended_at, (epoch_us(s.ended_at) - epoch_us(s.started_at)) / 1000000 AS duration_seconds,
    s.event_count, s.page_views, s.has_purchase, s.entry_url, s.exit_url, s.referrer, s.channel,
    s.client_platform
FROM spans AS s
LEFT JOIN people AS p ON p.visitor_id = s.visitor_id;

-- One row per product item code seen on an event or an order line. The lake holds no catalog yet, so
-- name, product id and category are the latest seen; first and last seen over both sources.
CREATE TEMP VIEW products AS
WITH seen AS (
    SELECT product_item_code, NULL::VARCHAR AS product_id, NULL::VARCHAR AS name, category_path, ts
    FROM _lake_events
    WHERE product_item_code IS NOT NULL AND product_item_code <> ''
    UNION ALL
    SELECT product_item_code, product_id, name, category_path, ts
    FROM order_items
    WHERE product_item_code IS NOT NULL AND product_item_code <> ''
)
SELECT product_item_code,
    arg_max(product_id, ts) FILTER (WHERE product_id IS NOT NULL AND product_id <> '') AS product_id,
    arg_max(name, ts) FILTER (WHERE name IS NOT NULL AND name <> '') AS name,
    arg_max(category_path, ts) FILTER (WHERE category_path IS NOT NULL AND category_path <> '') AS category_path,
    min(ts) AS first_seen_at,
    max(ts) AS last_seen_at
FROM seen
GROUP BY product_item_code;

-- One row per consent record a storefront sent (POST /public/sites/:siteKey/consent); a category left
-- out of a record is NULL (not stated by it). Consent fields on events are in `events`.
CREATE TEMP VIEW consents AS
SELECT consent_id, ts, received_at, date, visitor_id, session_id, user_id, source,
    consent_necessary, consent_analytics, consent_marketing, consent_preferences,
    channel, client_platform, client_version
FROM _lake_consents;
