-- Sales of the lines in `category_sales` per currency (an order counts once per currency however many
-- of its lines fall in the categories); amounts are never converted or summed across currencies.
SELECT currency, sum(amount) AS revenue, count(DISTINCT order_id) AS orders
FROM category_sales
GROUP BY currency
ORDER BY currency
