-- Per local day ($timezone) of the range: category views, viewers, product views and add-to-carts of
-- `category_events`, and (in rows with a currency) the orders and revenue of `category_sales` per
-- currency, never summed across currencies.
SELECT CAST(timezone($timezone, ts) AS DATE) AS day, NULL::VARCHAR AS currency,
    count(*) FILTER (WHERE name = 'category_view') AS category_views,
    count(DISTINCT person_id) FILTER (WHERE name = 'category_view') AS viewers,
    count(*) FILTER (WHERE name = 'product_view') AS product_views,
    count(*) FILTER (WHERE name = 'add_to_cart') AS add_to_carts,
    NULL::BIGINT AS orders, NULL::DECIMAL(38, 6) AS revenue
FROM category_events
GROUP BY day
UNION ALL
SELECT CAST(timezone($timezone, ts) AS DATE) AS day, currency, NULL, NULL, NULL, NULL,
    count(DISTINCT order_id), sum(amount)
FROM category_sales
GROUP BY day, currency
ORDER BY day, currency NULLS FIRST
