-- What the site's order lines without productItemCode say about the products they name by productId
-- (those in $product_ids), over the whole lake: when each was first and last seen (order time), the
-- newest receipt time, and its newest non-empty name, price (with the order's currency; not a refund's:
-- what was paid back is no price) and category path, read as `product_seen.sql` reads the lines the
-- catalog takes (at one instant the later receipt, then the order id, then the line's place). The
-- catalog names products by code and takes none of these lines.
WITH lines AS (
    SELECT item.product_id AS product_id, ts, received_at, currency, item.name AS product_name,
        (ts, coalesce(received_at, 'epoch'::TIMESTAMPTZ), order_id, line_no) AS newest,
        CASE WHEN NOT is_refund THEN item.price END AS price, item.category_path AS category_path
    FROM (
        SELECT order_id, ts, received_at, currency, is_refund, unnest(items) AS item,
            generate_subscripts(items, 1) AS line_no
        FROM orders
        WHERE site_id = $site_id
    )
    WHERE nullif(item.product_item_code, '') IS NULL AND list_contains($product_ids, item.product_id)
)
SELECT product_id,
    min(ts) AS first_seen_at,
    max(ts) AS last_seen_at,
    max(received_at) AS received_until,
    arg_max(product_name, newest) FILTER (WHERE nullif(product_name, '') IS NOT NULL) AS product_name,
    arg_max({'amount': price, 'currency': currency}, newest) FILTER (WHERE price >= 0) AS price,
    arg_max(category_path, newest) FILTER (WHERE nullif(category_path, '') IS NOT NULL) AS category_path
FROM lines
GROUP BY product_id
ORDER BY product_id
