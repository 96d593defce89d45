-- Sales of one product ($product_id, whose code is $code) per currency in the range (refunds apart):
-- line revenue (quantity times unit price, before order-level discounts), sales holding it, units. Its
-- lines carry its code, or no code and its productId; a line of quantity 0 bought nothing. Never summed
-- across currencies.
WITH lines AS (
    SELECT order_id, currency, item.quantity AS quantity, item.price AS price
    FROM (
        SELECT order_id, currency, unnest(items) AS item
        FROM orders
        WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
            AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    )
    WHERE line_is_product(item, $code, $product_id) AND item.quantity > 0
)
SELECT currency, sum(quantity * price) AS revenue, count(DISTINCT order_id) AS orders, sum(quantity) AS units
FROM lines
GROUP BY currency
ORDER BY currency
