-- Per category path, the activity of `category_events` and `category_sales`. With $rollup each event
-- and line also counts for every ancestor of its path (`Home` covers `Home > Kitchen`), so people are
-- distinct per node; without it, only for its own path. Nodes stay inside the subtree of
-- $category_path when it is not null. Revenue per node and currency as a list, never summed across
-- currencies.
WITH event_nodes AS (
    SELECT person_id, session_id, name,
        unnest(CASE WHEN $rollup THEN list_transform(
            range(1, len(string_split(category_path, ' > ')) + 1),
            lambda i: array_to_string(string_split(category_path, ' > ')[1:i], ' > ')
        ) ELSE [category_path] END) AS node
    FROM category_events
),
sale_nodes AS (
    SELECT order_id, person_id, currency, quantity, amount,
        unnest(CASE WHEN $rollup THEN list_transform(
            range(1, len(string_split(category_path, ' > ')) + 1),
            lambda i: array_to_string(string_split(category_path, ' > ')[1:i], ' > ')
        ) ELSE [category_path] END) AS node
    FROM category_sales
),
events_per_node AS (
    SELECT node,
        count(*) FILTER (WHERE name = 'category_view') AS category_views,
        count(DISTINCT person_id) FILTER (WHERE name = 'category_view') AS viewers,
        count(*) FILTER (WHERE name = 'category_filter') AS filter_uses,
        count(*) FILTER (WHERE name = 'product_view') AS product_views,
        count(*) FILTER (WHERE name = 'add_to_cart') AS add_to_carts
    FROM event_nodes
    GROUP BY node
),
sales_per_currency AS (
    SELECT node, currency, sum(amount) AS revenue, count(DISTINCT order_id) AS orders
    FROM sale_nodes
    GROUP BY node, currency
),
sales_per_node AS (
    SELECT node, count(DISTINCT order_id) AS orders, sum(quantity) AS units_sold,
        count(DISTINCT person_id) AS buyers
    FROM sale_nodes
    GROUP BY node
),
revenue_per_node AS (
    SELECT node, list(struct_pack(currency, revenue, orders) ORDER BY currency) AS revenue
    FROM sales_per_currency
    GROUP BY node
),
final AS (
    SELECT coalesce(e.node, s.node) AS category_path,
        coalesce(e.category_views, 0) AS category_views, coalesce(e.viewers, 0) AS viewers,
        coalesce(e.filter_uses, 0) AS filter_uses, coalesce(e.product_views, 0) AS product_views,
        coalesce(e.add_to_carts, 0) AS add_to_carts, coalesce(s.orders, 0) AS orders,
        coalesce(s.units_sold, 0) AS units_sold, coalesce(s.buyers, 0) AS buyers,
        coalesce(r.revenue, []) AS revenue
    FROM events_per_node AS e
    FULL JOIN sales_per_node AS s USING (node)
    LEFT JOIN revenue_per_node AS r ON r.node = coalesce(e.node, s.node)
)
SELECT * FROM final
WHERE $category_path IS NULL OR category_path = $category_path
   OR starts_with(category_path, $category_path || ' > ')
ORDER BY category_views DESC, orders DESC, category_path
