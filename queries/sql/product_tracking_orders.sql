-- Sales in the range (refunds apart), their lines, the products on them, and how many of those products
-- no product event of the range named (bought, but never seen by the tracker).
WITH lines AS (
    SELECT order_id, coalesce(nullif(item.product_item_code, ''), item.product_id) AS code
    FROM (
        SELECT order_id, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
),
tracked AS (
    SELECT DISTINCT product_item_code AS code
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND list_contains($product_events, name)
        AND product_item_code IS NOT NULL
)
SELECT count(DISTINCT order_id) AS orders,
    count(*) AS lines,
    count(DISTINCT code) AS products,
    count(DISTINCT code) FILTER (WHERE code NOT IN (SELECT code FROM tracked)) AS products_never_tracked
FROM lines
