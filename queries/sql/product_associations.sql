-- Market-basket figures of one product against every product sharing a basket with it. Reads
-- `basket_lines`: distinct (basket, product_key, id_only) lines of one source and mode
-- (`product_baskets_*.sql`), put before it, materialised, by `queries/products.py`. A product's key is
-- its code, or, for a product the baskets name only by a productId that no code of theirs derives to
-- (`id_only`), that productId. The product asked for is its code $code (NULL without one) or its
-- productId $product_id (when its lines in the range name it only by that). The baskets holding the
-- product are found first; only the products in them are counted over all baskets. Counts only: the
-- rates are computed by the caller.
WITH target_baskets AS (
    -- `id_only` tells a productId from a code that happens to spell it (another product).
    SELECT basket FROM basket_lines
    WHERE product_key IN ($code, $product_id) AND id_only = (product_key = $product_id)
),
together AS (
    SELECT l.product_key, l.id_only, count(*) AS together
    FROM basket_lines AS l
    SEMI JOIN target_baskets AS t ON t.basket = l.basket
    WHERE NOT coalesce(l.product_key IN ($code, $product_id) AND l.id_only = (l.product_key = $product_id), false)
    GROUP BY l.product_key, l.id_only
),
other_baskets AS (
    SELECT l.product_key, l.id_only, count(*) AS baskets
    FROM basket_lines AS l
    SEMI JOIN together AS g ON g.product_key = l.product_key AND g.id_only = l.id_only
    GROUP BY l.product_key, l.id_only
),
totals AS (
    SELECT
        (SELECT count(DISTINCT basket) FROM basket_lines) AS baskets,
        (SELECT count(*) FROM target_baskets) AS product_baskets,
        (SELECT count(*) FROM together) AS related_products
),
ranked AS (
    SELECT g.product_key, g.id_only, g.together, o.baskets AS code_baskets
    FROM together AS g
    JOIN other_baskets AS o ON o.product_key = g.product_key AND o.id_only = g.id_only
    ORDER BY g.together DESC, g.together / o.baskets DESC, g.id_only, g.product_key
    LIMIT $limit
)
SELECT t.baskets, t.product_baskets, t.related_products,
    -- The product's id (one SHA-1 per row answered) and code.
    CASE WHEN r.id_only THEN r.product_key ELSE product_id_of($site_id, r.product_key) END AS product_id,
    CASE WHEN NOT r.id_only THEN r.product_key END AS code, r.together, r.code_baskets
FROM totals AS t
LEFT JOIN ranked AS r ON true
ORDER BY r.together DESC, r.together / r.code_baskets DESC, r.id_only, r.product_key
