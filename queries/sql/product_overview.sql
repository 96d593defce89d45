-- One product ($product_id, whose code is $code) in the range: views, add-to-carts and sales, with the
-- people behind each (the linked user, else the visitor). Its events are the product events
-- ($product_events) naming its code: another event carrying the code (a page_view, say) counts for
-- nothing. Sales are order lines of the product (refunds apart; a line of quantity 0 bought nothing):
-- lines carrying its code, and lines without a code that name its productId; the number of purchases is
-- the number of sales holding it. Counts only.
WITH product_events AS (
    SELECT name, person_id
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND product_item_code = $code
        AND list_contains($product_events, name)
),
lines AS (
    SELECT person_id, order_id, item.quantity AS quantity
    FROM (
        SELECT person_id, order_id, unnest(items) AS item
        FROM orders_people_in([$site_id])
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
    WHERE line_is_product(item, $code, $product_id) AND item.quantity > 0
),
viewers AS (SELECT DISTINCT person_id FROM product_events WHERE name = 'product_view'),
carters AS (SELECT DISTINCT person_id FROM product_events WHERE name = 'add_to_cart'),
buyers AS (SELECT DISTINCT person_id FROM lines)
SELECT
    (SELECT count(*) FROM product_events WHERE name = 'product_view') AS views,
    (SELECT count(*) FROM viewers) AS viewers,
    (SELECT count(*) FROM product_events WHERE name = 'add_to_cart') AS add_to_carts,
    (SELECT count(*) FROM carters) AS carters,
    (SELECT count(DISTINCT order_id) FROM lines) AS purchases,
    (SELECT coalesce(sum(quantity), 0) FROM lines) AS units,
    (SELECT count(*) FROM buyers) AS buyers,
    (SELECT count(*) FROM viewers SEMI JOIN carters USING (person_id)) AS viewers_who_carted,
    (SELECT count(*) FROM viewers SEMI JOIN buyers USING (person_id)) AS viewers_who_bought,
    (SELECT count(*) FROM (SELECT person_id FROM product_events UNION SELECT person_id FROM buyers)) AS people
