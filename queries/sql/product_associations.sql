-- Market-basket figures of one product ($product_id) against every product sharing a basket with it.
-- Runs after `WITH basket_lines AS MATERIALIZED (<a product_baskets_* query>),`: distinct (basket, code,
-- line_product_id) lines, the last being the productId of an order line without a code. A product is
-- its productId: a code names the product whose id derives from it (`product_id_of`), so a line naming
-- only the productId of a code is that code's product. The baskets holding the product are found
-- first; only the products in them are counted over all baskets. Counts only: the rates are computed
-- by the caller.
product_codes AS (
    -- Each code once, with its product's id (one SHA-1 per code, not per line).
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (SELECT DISTINCT code FROM basket_lines WHERE code IS NOT NULL)
),
lines AS MATERIALIZED (
    SELECT DISTINCT l.basket, coalesce(c.product_id, l.line_product_id) AS product_id
    FROM basket_lines AS l
    LEFT JOIN product_codes AS c USING (code)
),
target_baskets AS (
    SELECT basket FROM lines WHERE product_id = $product_id
),
together AS (
    SELECT l.product_id, count(*) AS together
    FROM lines AS l
    SEMI JOIN target_baskets AS t ON t.basket = l.basket
    WHERE l.product_id <> $product_id
    GROUP BY l.product_id
),
other_baskets AS (
    SELECT l.product_id, count(*) AS baskets
    FROM lines AS l
    SEMI JOIN together AS g ON g.product_id = l.product_id
    GROUP BY l.product_id
),
totals AS (
    SELECT
        (SELECT count(DISTINCT basket) FROM lines) AS baskets,
        (SELECT count(*) FROM target_baskets) AS product_baskets,
        (SELECT count(*) FROM together) AS related_products
),
ranked AS (
    SELECT g.product_id, c.code, g.together, o.baskets AS code_baskets
    FROM together AS g
    JOIN other_baskets AS o USING (product_id)
    LEFT JOIN product_codes AS c USING (product_id)
    ORDER BY g.together DESC, g.together / o.baskets DESC, c.code NULLS LAST, g.product_id
    LIMIT $limit
)
SELECT t.baskets, t.product_baskets, t.related_products, r.product_id, r.code, r.together, r.code_baskets
FROM totals AS t
LEFT JOIN ranked AS r ON true
ORDER BY r.together DESC, r.together / r.code_baskets DESC, r.code NULLS LAST, r.product_id
