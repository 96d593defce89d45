-- Market-basket figures of one product ($code) against every product sharing a basket with it. Runs
-- after `WITH basket_lines AS MATERIALIZED (<a product_baskets_* query>),`: distinct (basket, code)
-- lines. The baskets holding the product are found first; only the products in them are counted over
-- all baskets. Counts only: the rates are computed by the caller.
target_baskets AS (
    SELECT basket FROM basket_lines WHERE code = $code
),
together AS (
    SELECT l.code, count(*) AS together
    FROM basket_lines AS l
    SEMI JOIN target_baskets AS t ON t.basket = l.basket
    WHERE l.code <> $code
    GROUP BY l.code
),
other_baskets AS (
    SELECT l.code, count(*) AS baskets
    FROM basket_lines AS l
    SEMI JOIN together AS g ON g.code = l.code
    GROUP BY l.code
),
totals AS (
    SELECT
        (SELECT count(DISTINCT basket) FROM basket_lines) AS baskets,
        (SELECT count(*) FROM target_baskets) AS product_baskets,
        (SELECT count(*) FROM together) AS related_products
),
ranked AS (
    SELECT g.code, g.together, o.baskets AS code_baskets
    FROM together AS g
    JOIN other_baskets AS o USING (code)
    ORDER BY g.together DESC, g.together / o.baskets DESC, g.code
    LIMIT $limit
)
SELECT t.baskets, t.product_baskets, t.related_products, r.code, r.together, r.code_baskets
FROM totals AS t
LEFT JOIN ranked AS r ON true
ORDER BY r.together DESC, r.together / r.code_baskets DESC, r.code
