-- Revenue and conversions credited to campaigns, widgets and recommendations, per attribution model,
-- per entity and currency (NULL currency: purchases without an order, which carry no money).
--
-- Conversions: orders (refunds excluded) whose time falls in [$range_start, $range_end), and
-- `purchase` events in it that name no sale (`metadata.orderId`: a sale of the site, of any date): a
-- purchase event naming a sale is that same purchase, counted once, at the sale's time, with its
-- money. Touchpoints: impressions and clicks ($touch_names) of an entity ($entity_types) by the same
-- person, strictly before the conversion and at most $lookback_us earlier. Each conversion's
-- touchpoints are ordered by time, then event id, and credited by each model so that one
-- conversion's credits sum to 1:
--   first_touch / last_touch: all to the first / last; linear: 1/n each;
--   time_decay: weight 2^(-age / $half_life_us), age = conversion time - touchpoint time, normalised;
--   position_based: 1 touch: 1; 2 touches: 1/2 each; n >= 3: 0.4 first, 0.4 last, 0.2/(n - 2) between.
-- A touchpoint's revenue share is its credit times the order total, rounded to 6 decimals (the
-- lake's money scale) before it is summed. $entity_type / $entity_id (NULL: any) keep the rows of
-- one entity (or one kind), with credits still split over all touchpoints of each conversion.
WITH orders_scoped AS (
    SELECT order_id, person_id, ts, currency, total
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND NOT is_refund
),
purchase_events AS (
    SELECT event_id, person_id, ts, json_extract_string(metadata, '$.orderId') AS order_ref
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND name = 'purchase'
),
conversions AS (
    SELECT 'order:' || order_id AS conversion_key, person_id, ts, currency, total FROM orders_scoped
    UNION ALL
    SELECT 'event:' || event_id, person_id, ts, NULL, NULL
    FROM purchase_events
    -- Against every sale of the site, as the overview and funnels read it: a sale of another day
    -- (the event stored days from its order) is still that sale, not a second conversion, and a
    -- refund's id names no sale.
    WHERE order_ref IS NULL OR NOT is_a_sale($site_id, order_ref)
),
touchpoints AS (
    SELECT event_id, person_id, ts, lower(entity_type) AS entity_type, entity_id
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $touch_scan_start AND $scan_end
        AND ts >= $touch_start AND ts < $range_end
        AND list_contains($touch_names, name) AND list_contains($entity_types, lower(entity_type))
        AND entity_id IS NOT NULL AND entity_id <> ''
),
pairs AS (
    SELECT c.conversion_key, c.ts AS conversion_at, c.currency, c.total,
        t.event_id, t.ts, t.entity_type, t.entity_id
    FROM conversions AS c
    JOIN touchpoints AS t
        ON t.person_id = c.person_id AND t.ts < c.ts AND epoch_us(t.ts) >= epoch_us(c.ts) - $lookback_us
),
targeted AS (
    -- Conversions with a touchpoint of the asked entity: only their credits can reach it.
    SELECT DISTINCT conversion_key FROM pairs
    WHERE ($entity_type IS NULL OR entity_type = $entity_type) AND ($entity_id IS NULL OR entity_id = $entity_id)
),
ranked AS (
    SELECT p.*,
        row_number() OVER (PARTITION BY p.conversion_key ORDER BY p.ts, p.event_id) AS position,
        count(*) OVER (PARTITION BY p.conversion_key) AS touches,
        pow(0.5, (epoch_us(p.conversion_at) - epoch_us(p.ts)) / $half_life_us) AS decay
    FROM pairs AS p
    WHERE p.conversion_key IN (SELECT conversion_key FROM targeted)
),
credited AS (
    SELECT conversion_key, currency, total, entity_type, entity_id,
        CASE WHEN position = 1 THEN 1.0 ELSE 0.0 END AS first_touch,
        CASE WHEN position = touches THEN 1.0 ELSE 0.0 END AS last_touch,
        1.0 / touches AS linear,
        decay / sum(decay) OVER (PARTITION BY conversion_key) AS time_decay,
        CASE WHEN touches = 1 THEN 1.0
            WHEN touches = 2 THEN 0.5
            WHEN position = 1 OR position = touches THEN 0.4
            ELSE 0.2 / (touches - 2)
        END AS position_based
    FROM ranked
),
final AS (
    SELECT * FROM credited
    WHERE ($entity_type IS NULL OR entity_type = $entity_type) AND ($entity_id IS NULL OR entity_id = $entity_id)
)
SELECT entity_type, entity_id, currency,
    count(DISTINCT conversion_key) AS touched_conversions,
    sum(first_touch)::DOUBLE AS first_touch_conversions,
    sum(last_touch)::DOUBLE AS last_touch_conversions,
    sum(linear)::DOUBLE AS linear_conversions,
    sum(time_decay)::DOUBLE AS time_decay_conversions,
    sum(position_based)::DOUBLE AS position_based_conversions,
    sum(round(first_touch * total, 6)::DECIMAL(24, 6)) AS first_touch_revenue,
    sum(round(last_touch * total, 6)::DECIMAL(24, 6)) AS last_touch_revenue,
    sum(round(linear * total, 6)::DECIMAL(24, 6)) AS linear_revenue,
    sum(round(time_decay * total, 6)::DECIMAL(24, 6)) AS time_decay_revenue,
    sum(round(position_based * total, 6)::DECIMAL(24, 6)) AS position_based_revenue
FROM final
GROUP BY entity_type, entity_id, currency
ORDER BY entity_type, entity_id, currency NULLS LAST
