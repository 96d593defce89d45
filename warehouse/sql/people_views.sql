-- People: analytics count a visitor as the user it was linked to, whenever the link happened
-- (before or after its events); a visitor never linked counts as itself.

-- The user a row's user id names: NULL for a blank one ('', ' '), which is no user: it would make one
-- person of every visitor sending it. Every query telling users apart calls it.
CREATE OR REPLACE MACRO user_of(user_id) AS CASE WHEN trim(user_id) <> '' THEN user_id END;

-- The user each visitor was linked to: the first user id seen with it, on an event or an order; of
-- two at one instant the smaller id (not whichever was stored first: compaction reorders rows).
CREATE OR REPLACE VIEW visitor_users AS
SELECT site_id, visitor_id, arg_min(user_id, (ts, user_id)) AS user_id
FROM (
    SELECT site_id, visitor_id, user_id, ts FROM events WHERE user_of(user_id) IS NOT NULL
    UNION ALL
    SELECT site_id, visitor_id, user_id, ts FROM orders WHERE user_of(user_id) IS NOT NULL
)
GROUP BY site_id, visitor_id;

-- A row's person: its visitor's first-linked user, else the user the row itself names (a consent
-- record of a visitor no event or order links), else the visitor. Every query resolving people calls it.
CREATE OR REPLACE MACRO person_of(linked_user, own_user, visitor) AS
    coalesce(linked_user, user_of(own_user), visitor);

-- People of a set of sites, for queries: `site_ids` is the list of sites a query reads (a one-site
-- query passes `[$site_id]`); NULL reads every site (the whole-lake views below). Every query reads
-- people through these, so the links come from its own sites only: a query's filter on a view joining
-- `visitor_users` reaches the links' scans only when it is `site_id = <one value>` (DuckDB carries an
-- equality across the join's condition, not a `list_contains`), so the organisation-wide routes would
-- build every site's links, every tenant's, and hash their events instead of the links.
-- A filter on `visitor_users` itself reaches its scans through its GROUP BY (site_id is a key).
CREATE OR REPLACE MACRO visitor_users_in(site_ids) AS TABLE
SELECT * FROM visitor_users WHERE site_ids IS NULL OR list_contains(site_ids, site_id);

CREATE OR REPLACE MACRO events_people_in(site_ids) AS TABLE
SELECT e.*, person_of(l.user_id, e.user_id, e.visitor_id) AS person_id
FROM (SELECT * FROM events WHERE site_ids IS NULL OR list_contains(site_ids, site_id)) AS e
LEFT JOIN visitor_users_in(site_ids) AS l ON l.site_id = e.site_id AND l.visitor_id = e.visitor_id;

CREATE OR REPLACE MACRO orders_people_in(site_ids) AS TABLE
SELECT o.*, person_of(l.user_id, o.user_id, o.visitor_id) AS person_id
FROM (SELECT * FROM orders WHERE site_ids IS NULL OR list_contains(site_ids, site_id)) AS o
LEFT JOIN visitor_users_in(site_ids) AS l ON l.site_id = o.site_id AND l.visitor_id = o.visitor_id;

-- The whole lake's people, for inspection and tests; queries use the macros above.
CREATE OR REPLACE VIEW events_people AS SELECT * FROM events_people_in(NULL);

CREATE OR REPLACE VIEW orders_people AS SELECT * FROM orders_people_in(NULL);

-- Shared vocabulary of the query library, beside the views it reads.

-- Seconds a product_dwell_time event reports: metadata.dwellTimeSeconds, else dwellSeconds or
-- durationSeconds, else milliseconds in dwellTimeMs or durationMs; NULL when none is a number (or a
-- string holding one).
CREATE OR REPLACE MACRO dwell_seconds(metadata) AS coalesce(
    TRY_CAST(json_extract_string(metadata, '$.dwellTimeSeconds') AS DOUBLE),
    TRY_CAST(json_extract_string(metadata, '$.dwellSeconds') AS DOUBLE),
    TRY_CAST(json_extract_string(metadata, '$.durationSeconds') AS DOUBLE),
    TRY_CAST(json_extract_string(metadata, '$.dwellTimeMs') AS DOUBLE) / 1000,
    TRY_CAST(json_extract_string(metadata, '$.durationMs') AS DOUBLE) / 1000
);

-- A stored category path in the form the category analytics compare: its parts joined by ' > ',
-- blank parts dropped (shops send 'Home>>Kitchen', 'Home >'); 'unknown' when no part is left.
CREATE OR REPLACE MACRO category_path_of(path) AS coalesce(
    nullif(regexp_replace(regexp_replace(path, '\s*(>\s*)+', ' > ', 'g'), '^[\s>]+|[\s>]+$', '', 'g'), ''),
    'unknown'
);

-- Whether an order id (a purchase event's metadata.orderId) is a sale of its site: such an event is
-- that sale, whoever sent it (a forwarded thank-you page), so the sale counts once, for the order's
-- person. The subquery names its columns apart from every column of events and orders: DuckDB puts
-- a macro's arguments into its body as written, so a caller's bare `site_id` (in a WHERE clause) would
-- bind to the orders' own `site_id`, and another site's sale of the same id count as this site's.
CREATE OR REPLACE MACRO is_a_sale(site, order_ref) AS EXISTS (
    SELECT 1 FROM (SELECT site_id AS sale_site, order_id AS sale_order_id FROM orders WHERE NOT is_refund)
    WHERE sale_site = site AND sale_order_id = order_ref
);

CREATE OR REPLACE MACRO names_a_sale(site, metadata) AS is_a_sale(site, json_extract_string(metadata, '$.orderId'));

-- The text a shop sent at `path` of an event's metadata: a string, or a number as written; NULL for
-- objects, arrays, booleans and nulls (which are no search query, say, whatever their JSON text).
CREATE OR REPLACE MACRO text_at(metadata, path) AS CASE
    WHEN json_type(metadata, path) IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE') THEN json_extract_string(metadata, path)
END;

-- A name-based uuid's text from the SHA-1 (hex) of its namespace and name (RFC 9562, UUIDv5): the
-- first 16 bytes, the version nibble set to 5 and the variant bits to 10.
CREATE OR REPLACE MACRO uuid5_of_sha1(digest) AS
    substr(digest, 1, 8) || '-' || substr(digest, 9, 4) || '-5' || substr(digest, 14, 3) || '-'
    || substr('89ab89ab89ab89ab', strpos('0123456789abcdef', substr(digest, 17, 1)), 1)
    || substr(digest, 18, 3) || '-' || substr(digest, 21, 12);

-- The productId of a productItemCode on a site, as `product_id_for` (warehouse/config_store/product_identity.py)
-- derives it: uuid5 of '<site uuid>:<code>' in Aisle's product namespace (codes in the lake are trimmed
-- already). One SHA-1 per call: queries apply it to distinct codes, not to every row.
CREATE OR REPLACE MACRO product_id_of(site, code) AS uuid5_of_sha1(
    sha1(unhex('143e6f05ce8a571a8d258db674b40140') || encode(site::UUID::VARCHAR || ':' || code))
);

-- Whether an order line (an element of `items`) is the product of code `wanted_code` and productId
-- `wanted_id`: a line carrying a code is that code's product; one without names its product by productId.
CREATE OR REPLACE MACRO line_is_product(line, wanted_code, wanted_id) AS CASE
    WHEN nullif(line.product_item_code, '') IS NULL THEN line.product_id = wanted_id
    ELSE line.product_item_code = wanted_code
END;

-- The search query an event's metadata names: the first of query, q, searchQuery and searchTerm that is
-- text or a number, in lower case, every run of white space (tabs, line breaks and Unicode spaces such
-- as the no-break space too) one space, trimmed; NULL when nothing is left.
-- Metadata whose text has no 'q', no 'searchQuery', no 'searchTerm' and no backslash (a key spelled
-- with escapes) names none of the four keys, so it is not parsed: most events of a shop carry no query,
-- and parsing is most of the cost. The test stays inside `nullif`: around the whole expression it
-- makes the rows that do carry a query half as slow again.
CREATE OR REPLACE MACRO search_query_of(metadata) AS nullif(lower(trim(regexp_replace(CASE
    WHEN contains(metadata, 'q') OR contains(metadata, 'searchQuery') OR contains(metadata, 'searchTerm')
        OR contains(metadata, '\') THEN coalesce(
            text_at(metadata, '$.query'), text_at(metadata, '$.q'), text_at(metadata, '$.searchQuery'),
            text_at(metadata, '$.searchTerm'))
END, '[[:space:]\pZ]+', ' ', 'g'))), '');
