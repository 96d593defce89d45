-- The order lines of one site's sales in the range (refunds apart) that bought something (quantity above
-- 0), as the temporary table `category_sales` of the cursor: order, person, time, currency, product,
-- quantity, line amount (unit price × quantity) and the line's normalised category path ('unknown' when
-- it has none), restricted to the subtree of $category_path when it is not null. `line_no`, the line's
-- place in its order, orders the lines of one order (the newest name is the last line's).
CREATE OR REPLACE TEMP TABLE category_sales AS
WITH lines AS (
    SELECT order_id, person_id, ts, currency, unnest(items) AS item, generate_subscripts(items, 1) AS line_no
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end AND NOT is_refund
),
final AS (
    SELECT order_id, line_no, person_id, ts, currency,
        nullif(item.product_item_code, '') AS product_item_code, item.product_id,
        nullif(item.name, '') AS product_name,  -- an empty name names nothing
        item.quantity, item.price * item.quantity AS amount,
        category_path_of(item.category_path) AS category_path
    FROM lines
)
SELECT * FROM final
WHERE quantity > 0 AND ($category_path IS NULL OR category_path = $category_path
   OR starts_with(category_path, $category_path || ' > '))
