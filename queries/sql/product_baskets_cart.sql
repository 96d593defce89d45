-- Baskets for source=cart, mode=session or all: the products one basket (a visitor's session, or a
-- person over the range) added to cart in the range. Reads `keyed_events`: the events with their
-- basket's key as `basket`, put before it by `queries/products.py` for the mode.
SELECT DISTINCT basket, product_item_code AS product_key, false AS id_only
FROM keyed_events
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end
    AND name = 'add_to_cart' AND nullif(product_item_code, '') IS NOT NULL
