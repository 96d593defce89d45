-- The products of purchase baskets. Runs after `WITH order_lines AS MATERIALIZED (<a
-- product_baskets_purchase_* query>),`: the basket, code and, for a line without one, productId of each
-- sale line. Answers the distinct (basket, product_key, id_only) lines `product_associations.sql` reads:
-- a line without a code is the product of the code deriving to its productId (`product_id_of`) when a
-- line here carries that code, else a product known only by that productId (`id_only`, keyed by it).
-- Codes are hashed only when some line has no code, once per distinct code.
product_codes AS (
    SELECT code, product_id_of($site_id, code) AS product_id
    FROM (
        SELECT DISTINCT code FROM order_lines
        WHERE code IS NOT NULL AND EXISTS (SELECT 1 FROM order_lines WHERE code IS NULL)
    )
)
SELECT DISTINCT l.basket, coalesce(l.code, c.code, l.line_product_id) AS product_key,
    l.code IS NULL AND c.code IS NULL AS id_only
FROM order_lines AS l
LEFT JOIN product_codes AS c ON c.product_id = l.line_product_id
