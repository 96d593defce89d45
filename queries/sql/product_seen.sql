-- What the lake says about each product of a site, from product events and order lines received after
-- $received_after (rows without a receipt time only on the $first_read): when it was first and last
-- seen (event time), how far this read got (receipt time), and its newest non-empty name, price (with
-- the currency of that event or order), category path, page and image, each as {value, at} with the
-- event time it was seen at. Newest is by event time; at one instant the later receipt, then the event
-- or order id, then the line's place in its order, so ties never depend on the order rows were stored
-- in. Events: metadata.name (or productName), .price, .categoryPath (or the event's category), .url
-- (else the page of a product_view), .image (or imageUrl). Order lines: name, unit price (not a
-- refund's: what was paid back is no price), category path; a product only ever refunded is still a
-- product the shop sells. A line without productItemCode adds nothing: the catalog names products by
-- code, and its productId (a uuid) is derived from one. Codes are trimmed, as product ids are.
WITH product_events AS (
    -- The metadata is parsed once per event for all the paths.
    SELECT product_item_code, ts, received_at, event_id, currency, category_path, name, url,
        json_extract_string(metadata, ['$.name', '$.productName', '$.price', '$.categoryPath', '$.url',
            '$.image', '$.imageUrl']) AS m
    FROM events
    WHERE site_id = $site_id AND (received_at > $received_after OR (received_at IS NULL AND $first_read))
        AND product_item_code IS NOT NULL
),
observed AS (
    SELECT trim(product_item_code) AS code, ts, received_at,
        (ts, coalesce(received_at, 'epoch'::TIMESTAMPTZ), event_id, 0) AS newest,
        coalesce(m[1], m[2]) AS product_name,
        TRY_CAST(m[3] AS DECIMAL(24, 6)) AS price,
        currency,
        coalesce(category_path, m[4]) AS category_path,
        coalesce(m[5], CASE WHEN name = 'product_view' THEN url END) AS page,
        coalesce(m[6], m[7]) AS image
    FROM product_events
    UNION ALL
    SELECT trim(item.product_item_code) AS code, ts, received_at,
        (ts, coalesce(received_at, 'epoch'::TIMESTAMPTZ), order_id, line_no) AS newest,
        item.name AS product_name, CASE WHEN NOT is_refund THEN item.price END AS price, currency,
        item.category_path, NULL AS page, NULL AS image
    FROM (
        SELECT ts, received_at, order_id, currency, is_refund, unnest(items) AS item,
            generate_subscripts(items, 1) AS line_no
        FROM orders
        WHERE site_id = $site_id AND (received_at > $received_after OR (received_at IS NULL AND $first_read))
    )
)
SELECT code,
    min(ts) AS first_seen_at,
    max(ts) AS last_seen_at,
    max(received_at) AS received_until,
    arg_max({'value': product_name, 'at': ts}, newest) FILTER (WHERE nullif(product_name, '') IS NOT NULL)
        AS product_name,
    arg_max({'amount': price, 'currency': currency, 'at': ts}, newest) FILTER (WHERE price >= 0) AS price,
    arg_max({'value': category_path, 'at': ts}, newest) FILTER (WHERE nullif(category_path, '') IS NOT NULL)
        AS category_path,
    arg_max({'value': page, 'at': ts}, newest) FILTER (WHERE nullif(page, '') IS NOT NULL) AS page,
    arg_max({'value': image, 'at': ts}, newest) FILTER (WHERE nullif(image, '') IS NOT NULL) AS image
FROM observed
WHERE nullif(code, '') IS NOT NULL
GROUP BY code
ORDER BY code
