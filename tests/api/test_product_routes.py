"""Product analytics v2 over HTTP: catalog and feed import, one product's overview, dwell time and
associations (computed by hand), top products per currency, tracking status, productId rules, the
removed v1 routes and tenancy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session
from warehouse.config_store.product_identity import product_id_for

pytestmark = pytest.mark.shared_app

DAY = {"startDate": "2024-03-01", "endDate": "2024-03-01"}


def pid(site: dict, code: str) -> str:
    return str(product_id_for(site["id"], code))


def event(
    event_name: str, visitor: str, session: str, clock: str, code: str | None = None, **metadata
) -> dict:
    if code is not None:
        metadata = {"productItemCode": code, **metadata}
    return {"name": event_name, "visitorId": visitor, "sessionId": session, "timestamp": f"2024-03-01T{clock}Z",
            "metadata": metadata}  # fmt: skip


def order(order_id: str, visitor: str, session: str, clock: str, currency: str, lines: list, **extra) -> dict:
    items = [{"productItemCode": code, "quantity": quantity, "price": price, **more}
             for code, quantity, price, *rest in lines for more in [rest[0] if rest else {}]]  # fmt: skip
    total = sum(float(q) * float(p) for _, q, p, *_ in lines)
    return {"orderId": order_id, "visitorId": visitor, "sessionId": session, "timestamp": f"2024-03-01T{clock}Z",
            "currency": currency, "total": str(total), "items": items, **extra}  # fmt: skip


# Sales: o1..o6 (o7 refunds o1). Carts: v5 adds A, B, buys (purchase event), adds A, C in session s6;
# v6 adds B, C in s7; v7 adds A in s8. Views of A by v1, v5 and v6.
ORDERS = [
    order("o1", "v1", "s1", "09:10:00", "EUR", [("A", 2, "10.00", {"name": "Apple"}), ("B", 1, "5.00")]),
    order("o2", "v2", "s2", "09:20:00", "USD", [("A", 1, "12.50"), ("B", 1, "6.00"), ("C", 1, "3.00")]),
    order("o3", "v2", "s3", "09:30:00", "JPY", [("A", 1, "1500"), ("C", 1, "400")]),
    order("o4", "v3", "s4", "09:40:00", "EUR", [("B", 1, "5.00")]),
    order("o5", "v1", "s1", "09:50:00", "EUR", [("D", 1, "7.00", {"name": "Durian", "categoryPath": "Fruit"})]),
    order("o6", "v4", "s5", "09:55:00", "EUR", [("B", 1, "5.00"), ("C", 1, "2.00")]),
    order("o7", "v1", "s1", "10:30:00", "EUR", [("A", 1, "10.00"), ("D", 1, "7.00")], isRefund=True,
          refundOf="o1"),
]  # fmt: skip
EVENTS = [
    event("product_view", "v1", "s1", "09:00:00", "A", name="Apple"),
    event("product_view", "v5", "s6", "09:59:00", "A", name="Apple"),
    event("add_to_cart", "v5", "s6", "10:00:00", "A", name="Apple"),
    event("add_to_cart", "v5", "s6", "10:01:00", "B", name="Banana"),
    event("purchase", "v5", "s6", "10:02:00"),
    event("add_to_cart", "v5", "s6", "10:03:00", "A"),
    event("add_to_cart", "v5", "s6", "10:04:00", "C", name="Cherry"),
    event("product_view", "v6", "s7", "10:30:00", "A", name="Apple"),
    event("add_to_cart", "v6", "s7", "11:00:00", "B"),
    event("add_to_cart", "v6", "s7", "11:01:00", "C"),
    event("add_to_cart", "v7", "s8", "12:00:00", "A"),
    event("product_dwell_time", "v5", "s6", "09:59:30", "A", dwellTimeSeconds=12),
    event("product_dwell_time", "v6", "s7", "10:31:00", "A", dwellTimeSeconds=40.5),
    event("product_dwell_time", "v6", "s7", "10:32:00", "A", dwellTimeMs=3000),
    event("product_dwell_time", "v1", "s1", "09:01:00", "A", dwellTimeSeconds=7200),
    event("product_dwell_time", "v1", "s1", "09:02:00", "A"),
]


def shop(app, owner: Session, **fields) -> dict:
    site = owner.make_site(timezone="UTC", **fields)
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": EVENTS})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    for body in ORDERS:
        response = owner.post("/analytics/track/order", json={"siteId": site["id"], **body})
        assert response.status_code == 201, response.text
    app.state.ingest.flush()
    return site


def associations(owner: Session, site: dict, **params) -> dict:
    response = owner.get(f"/analytics/product/{site['id']}/associations",
                         params={**DAY, "productId": pid(site, "A"), **params})  # fmt: skip
    assert response.status_code == 200, response.text
    return response.json()


def figures(body: dict) -> list[tuple]:
    return [(a["productItemCode"], a["together"], a["basketsWithProduct"], a["support"], a["confidence"], a["lift"])
            for a in body["associations"]]  # fmt: skip


def test_associations_by_hand_for_every_source_and_mode(app, owner):
    site = shop(app, owner)
    # Orders o1..o6 (o7 is a refund): {A,B} {A,B,C} {A,C} {B} {D} {B,C}. N=6, |A|=3.
    # C: |C|=3, |A∧C|=2 → support 2/6, confidence 2/3, lift 2·6/(3·3). B: |B|=4, |A∧B|=2 → lift 2·6/(3·4).
    body = associations(owner, site, source="purchase")
    assert (body["mode"], body["baskets"], body["productBaskets"], body["productSupport"]) == (
        "cart",
        6,
        3,
        0.5,
    )
    assert body["relatedProducts"] == 2
    assert figures(body) == [("C", 2, 3, 0.333333, 0.666667, 1.333333), ("B", 2, 4, 0.333333, 0.666667, 1.0)]
    assert body["associations"][0]["productId"] == pid(site, "C")
    assert body["product"] == {"productId": pid(site, "A"), "productItemCode": "A", "name": "Apple"}

    # Sessions: s1 {A,B,D} (o1, o5), s2 {A,B,C}, s3 {A,C}, s4 {B}, s5 {B,C}. N=5, |A|=3.
    body = associations(owner, site, source="purchase", mode="session")
    assert (body["baskets"], body["productBaskets"]) == (5, 3)
    assert figures(body) == [
        ("C", 2, 3, 0.4, 0.666667, 1.111111), ("B", 2, 4, 0.4, 0.666667, 0.833333),
        ("D", 1, 1, 0.2, 0.333333, 1.666667),
    ]  # fmt: skip

    # People: v1 {A,B,D}, v2 {A,B,C}, v3 {B}, v4 {B,C}. N=4, |A|=2.
    body = associations(owner, site, source="purchase", mode="all")
    assert (body["baskets"], body["productBaskets"]) == (4, 2)
    assert figures(body) == [
        ("B", 2, 4, 0.5, 1.0, 1.0),
        ("D", 1, 1, 0.25, 0.5, 2.0),
        ("C", 1, 2, 0.25, 0.5, 1.0),
    ]

    # Carts: the purchase event closes v5's first cart: {A,B} {A,C} (s6), {B,C} (s7), {A} (s8). N=4, |A|=3.
    body = associations(owner, site, source="cart")
    assert (body["baskets"], body["productBaskets"]) == (4, 3)
    assert figures(body) == [("B", 1, 2, 0.25, 0.333333, 0.666667), ("C", 1, 2, 0.25, 0.333333, 0.666667)]
    assert [a["name"] for a in body["associations"]] == ["Banana", "Cherry"]

    # Sessions of carts: s6 {A,B,C}, s7 {B,C}, s8 {A}. N=3, |A|=2.
    body = associations(owner, site, source="cart", mode="session")
    assert (body["baskets"], body["productBaskets"]) == (3, 2)
    assert figures(body) == [("B", 1, 2, 0.333333, 0.5, 0.75), ("C", 1, 2, 0.333333, 0.5, 0.75)]

    assert figures(associations(owner, site, source="purchase", limit=1)) == [
        ("C", 2, 3, 0.333333, 0.666667, 1.333333)
    ]
    # Another day has no baskets at all.
    empty = associations(owner, site, source="purchase", startDate="2024-03-02", endDate="2024-03-02")
    assert (empty["baskets"], empty["productBaskets"], empty["associations"]) == (0, 0, [])


def test_association_parameters_are_validated(app, owner):
    site = owner.make_site()
    base = f"/analytics/product/{site['id']}/associations"
    missing = owner.get(base, params={"productId": pid(site, "A")})
    assert (
        missing.status_code == 400
        and missing.json()["error"]["details"]["fields"][0]["field"] == "query.source"
    )
    wrong = owner.get(base, params={"productId": pid(site, "A"), "source": "purchase", "mode": "basket"})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "VALIDATION_FAILED"
    unknown = owner.get(base, params={"productId": pid(site, "nothing"), "source": "cart"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "PRODUCT_NOT_FOUND"


def test_product_overview_counts_views_carts_sales_and_revenue_per_currency(app, owner):
    site = shop(app, owner)
    response = owner.get(
        f"/analytics/product/{site['id']}/overview", params={**DAY, "productId": pid(site, "A")}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: v for k, v in body.items() if k not in ("product", "range")} == {
        "views": 3, "uniqueViewers": 3, "addToCarts": 3, "addToCartPeople": 2, "purchases": 3, "unitsSold": 4,
        "buyers": 2, "people": 5, "viewToCartRate": 0.333333, "conversionRate": 0.333333,
        "revenueByCurrency": [
            {"currency": "EUR", "revenue": "20.00", "orders": 1, "units": 2},
            {"currency": "JPY", "revenue": "1500", "orders": 1, "units": 1},
            {"currency": "USD", "revenue": "12.50", "orders": 1, "units": 1},
        ],
        "revenue": {"amount": None, "currency": None, "mixed": True},
    }  # fmt: skip
    assert body["range"] == {"startDate": "2024-03-01", "endDate": "2024-03-01", "timezone": "UTC"}
    # The catalog learnt A from events and orders: the newest sale line (o3, JPY) gives its price.
    assert {k: body["product"][k] for k in ("productId", "name", "price", "currency", "inFeed", "seenInEvents")} == {
        "productId": pid(site, "A"), "name": "Apple", "price": "1500", "currency": "JPY", "inFeed": False,
        "seenInEvents": True,
    }  # fmt: skip
    # A day without sales: the card is zero in the product's currency.
    quiet = owner.get(
        f"/analytics/product/{site['id']}/overview",
        params={"startDate": "2024-03-02", "endDate": "2024-03-02", "productId": pid(site, "A")},
    ).json()
    assert (quiet["revenueByCurrency"], quiet["revenue"]) == (
        [],
        {"amount": "0", "currency": "JPY", "mixed": False},
    )


def test_dwell_time_reads_seconds_and_milliseconds_and_counts_the_rest_apart(app, owner):
    site = shop(app, owner)
    response = owner.get(
        f"/analytics/product/{site['id']}/dwell-time", params={**DAY, "productId": pid(site, "A")}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    # Measured: 12, 40.5 and 3 (3000 ms); 7200 s is out of range, one event has no duration.
    assert {k: v for k, v in body.items() if k not in ("product", "range", "distribution", "daily")} == {
        "events": 5, "measured": 3, "withoutDuration": 1, "outOfRange": 1, "people": 2, "totalSeconds": 55.5,
        "avgSeconds": 18.5, "medianSeconds": 12.0, "p75Seconds": 26.25, "p90Seconds": 34.8, "maxSeconds": 40.5,
    }  # fmt: skip
    assert [(b["label"], b["events"]) for b in body["distribution"]] == [
        ("0-5s", 1), ("5-15s", 1), ("15-30s", 0), ("30-60s", 1), ("60-180s", 0), ("180s+", 0)
    ]  # fmt: skip
    assert body["daily"] == [{"date": "2024-03-01", "events": 3, "avgSeconds": 18.5, "medianSeconds": 12.0}]


def test_top_products_rank_within_each_currency_and_every_row_carries_it(app, owner):
    site = shop(app, owner)
    response = owner.get(f"/analytics/product/{site['id']}/top", params={**DAY, "limit": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["sortBy"], body["currencies"], body["mixedCurrency"]) == (
        "revenue",
        ["EUR", "JPY", "USD"],
        True,
    )
    assert [(p["currency"], p["rank"], p["productItemCode"], p["revenue"], p["orders"], p["units"], p["views"],
             p["addToCarts"]) for p in body["products"]] == [
        ("EUR", 1, "A", "20.00", 1, 2, 3, 3), ("EUR", 2, "B", "15.00", 3, 3, 0, 2),
        ("JPY", 1, "A", "1500", 1, 1, 3, 3), ("JPY", 2, "C", "400", 1, 1, 0, 2),
        ("USD", 1, "A", "12.50", 1, 1, 3, 3), ("USD", 2, "B", "6.00", 1, 1, 0, 2),
    ]  # fmt: skip
    assert body["products"][0]["productId"] == pid(site, "A") and body["products"][0]["name"] == "Apple"
    by_orders = owner.get(f"/analytics/product/{site['id']}/top",
                          params={**DAY, "sortBy": "orders", "currency": "eur"}).json()  # fmt: skip
    assert [(p["productItemCode"], p["orders"]) for p in by_orders["products"]] == [
        ("B", 3), ("A", 1), ("C", 1), ("D", 1)
    ]  # fmt: skip
    assert by_orders["mixedCurrency"] is False
    bad = owner.get(f"/analytics/product/{site['id']}/top", params={"currency": "EUX"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "CURRENCY_NOT_ISO4217"


def test_tracking_status_reports_events_orders_and_what_to_fix(app, owner):
    site = shop(app, owner)
    response = owner.get(f"/analytics/product/{site['id']}/tracking-status", params=DAY)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    events = {e["name"]: (e["events"], e["products"], e["withName"]) for e in body["events"]}
    assert events == {
        "product_impression": (0, 0, 0), "product_click": (0, 0, 0), "product_view": (3, 1, 3),
        "product_dwell_time": (5, 1, 0), "add_to_cart": (7, 3, 3), "wishlist": (0, 0, 0),
    }  # fmt: skip
    assert body["lastProductEventAt"] == "2024-03-01T12:00:00Z"
    # D was sold but no product event named it.
    assert body["orders"] == {"orders": 6, "lines": 11, "products": 4, "productsNeverTracked": 1}
    assert body["catalog"] == {"products": 4, "fromFeed": 0, "seenOnlyInEvents": 4, "feedProductsSeen": 0}
    checks = {c["id"]: c["ok"] for c in body["checks"]}
    assert checks == {"product_views": True, "add_to_cart": True, "dwell_time": True, "product_names": False,
                      "orders_match_tracking": False, "catalog_feed": False}  # fmt: skip
    quiet = owner.get(f"/analytics/product/{site['id']}/tracking-status",
                      params={"startDate": "2024-03-02", "endDate": "2024-03-02"}).json()  # fmt: skip
    assert quiet["status"] == "not_tracking" and quiet["lastProductEventAt"] is None


FEED_CSV = """sku,title,price,currency,categories,stock,link,image_link
A1,Blue mug,12.50,,Home > Kitchen|Gifts,3,https://shop.example.com/a1,https://cdn.example.com/a1.jpg
A2,Red mug,9.99 USD,,,0,/p/a2,
A3,No price,,,,,,
,Missing code,1.00,,,,,
A4,Bad price,abc,,,,,
A5,Bad currency,1.00,EURO,,,,
A6,Bad stock,1.00,,,-2,,
A1,Duplicate,1.00,,,,,
A7,Yen,1200,JPY,,,,
"""


def post_feed(owner: Session, site: dict, body: str, content_type: str, **params):
    return owner.post(f"/analytics/product/{site['id']}/feed", content=body.encode(),
                      headers={"Content-Type": content_type}, params=params)  # fmt: skip


def test_feed_import_keeps_good_rows_refuses_bad_ones_and_fills_the_site_currency(app, owner):
    site = owner.make_site(currency="GBP", timezone="UTC")
    response = post_feed(owner, site, FEED_CSV, "text/csv")
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: body[k] for k in ("format", "rowsRead", "accepted", "created", "updated", "rejected")} == {
        "format": "csv", "rowsRead": 9, "accepted": 4, "created": 4, "updated": 0, "rejected": 5,
    }  # fmt: skip
    assert [(r["row"], r["code"]) for r in body["rejections"]] == [
        (5, "MISSING_PRODUCT_CODE"), (6, "INVALID_PRICE"), (7, "CURRENCY_NOT_ISO4217"), (8, "INVALID_STOCK"),
        (9, "DUPLICATE_PRODUCT_CODE"),
    ]  # fmt: skip
    assert body["rejections"][4]["reason"] == "productItemCode 'A1' was already given in row 2"

    catalog = owner.get(f"/analytics/product/{site['id']}/catalog").json()
    assert (catalog["total"], catalog["totalPages"]) == (4, 1)
    assert [(p["productItemCode"], p["name"], p["price"], p["currency"]) for p in catalog["products"]] == [
        ("A1", "Blue mug", "12.50", "GBP"), ("A3", "No price", None, "GBP"), ("A2", "Red mug", "9.99", "USD"),
        ("A7", "Yen", "1200", "JPY"),
    ]  # fmt: skip
    first = catalog["products"][0]
    assert {k: first[k] for k in ("productId", "categories", "stock", "url", "image", "inFeed", "seenInEvents")} == {
        "productId": pid(site, "A1"), "categories": ["Home > Kitchen", "Gifts"], "stock": 3,
        "url": "https://shop.example.com/a1", "image": "https://cdn.example.com/a1.jpg", "inFeed": True,
        "seenInEvents": False,
    }  # fmt: skip

    # A JSON feed updates the fields it gives; the others stay.
    update = post_feed(owner, site, '[{"productItemCode": "A3", "price": 4}]', "application/json").json()
    assert (update["accepted"], update["created"], update["updated"], update["rejected"]) == (1, 0, 1, 0)
    a3 = owner.get(f"/analytics/product/{site['id']}/catalog", params={"search": "a3"}).json()["products"]
    assert [(p["name"], p["price"], p["currency"]) for p in a3] == [("No price", "4.00", "GBP")]

    # Events: a feed product keeps the feed's name; a product only seen in events joins the catalog.
    events = [event("product_view", "v1", "s1", "09:00:00", "A1", name="Event name"),
              event("product_view", "v1", "s1", "09:01:00", "Z9", name="Zebra mug", price=3.5)]  # fmt: skip
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events}).status_code == 200
    )
    app.state.ingest.flush()
    summary = owner.get(f"/analytics/product/{site['id']}/feeds-summary").json()
    assert {k: v for k, v in summary.items() if k != "lastImport"} == {
        "products": 5, "fromFeed": 4, "seenOnlyInEvents": 1, "feedProductsSeenInEvents": 1, "imports": 2,
        "rejectedRowsTotal": 5,
    }  # fmt: skip
    last = summary["lastImport"]
    assert (last["source"], last["format"], last["rowsRead"], last["accepted"], last["rejected"]) == (
        "api", "json", 1, 1, 0
    )  # fmt: skip
    mugs = owner.get(f"/analytics/product/{site['id']}/catalog", params={"search": "MUG"}).json()["products"]
    assert [(p["productItemCode"], p["name"], p["price"], p["currency"], p["inFeed"]) for p in mugs] == [
        ("A1", "Blue mug", "12.50", "GBP", True), ("A2", "Red mug", "9.99", "USD", True),
        ("Z9", "Zebra mug", "3.50", "GBP", False),
    ]  # fmt: skip


def test_catalog_search_and_paging(app, owner):
    site = owner.make_site(currency="EUR")
    rows = "\n".join(f"P{n:02d},Item {n:02d},{n}.5" for n in range(1, 24))
    assert post_feed(owner, site, "code,name,price\n" + rows, "text/csv").json()["accepted"] == 23
    page = owner.get(f"/analytics/product/{site['id']}/catalog", params={"page": 3, "limit": 10}).json()
    assert (page["total"], page["page"], page["limit"], page["totalPages"]) == (23, 3, 10, 3)
    assert [(p["productItemCode"], p["price"]) for p in page["products"]] == [
        ("P21", "21.50"), ("P22", "22.50"), ("P23", "23.50")
    ]  # fmt: skip
    found = owner.get(f"/analytics/product/{site['id']}/catalog", params={"search": "item 1"}).json()
    assert [p["productItemCode"] for p in found["products"]] == [f"P{n}" for n in range(10, 20)]
    # Percent and underscore are matched literally.
    assert owner.get(f"/analytics/product/{site['id']}/catalog", params={"search": "%"}).json()["total"] == 0
    beyond = owner.get(f"/analytics/product/{site['id']}/catalog", params={"page": 9}).json()
    assert (beyond["products"], beyond["total"]) == ([], 23)
    assert owner.get(f"/analytics/product/{site['id']}/catalog", params={"limit": 101}).status_code == 400


def test_unreadable_feeds_answer_400_and_store_nothing(app, owner):
    site = owner.make_site()
    assert post_feed(owner, site, "[1, 2", "application/json").json()["error"]["code"] == "FEED_UNREADABLE"
    assert post_feed(owner, site, "", "text/csv").json()["error"]["code"] == "FEED_EMPTY"
    assert post_feed(owner, site, "code\nA", "text/plain").json()["error"]["code"] == "FEED_FORMAT_UNKNOWN"
    rows = post_feed(
        owner, site, '{"productItemCode": "A"}\n[]\nnot json', "text/plain", format="jsonl"
    ).json()
    assert (rows["accepted"], rows["rejectedByCode"]) == (1, {"ROW_NOT_OBJECT": 2})
    summary = owner.get(f"/analytics/product/{site['id']}/feeds-summary").json()
    assert (summary["imports"], summary["products"], summary["rejectedRowsTotal"]) == (1, 1, 2)


def test_product_queries_refuse_product_item_code_naming_the_fix(app, owner):
    site = owner.make_site()
    for route in ("overview", "dwell-time", "associations"):
        response = owner.get(f"/analytics/product/{site['id']}/{route}",
                             params={"productItemCode": "SKU-1", "source": "cart"})  # fmt: skip
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "PRODUCT_ID_REQUIRED"
        assert f"productId={pid(site, 'SKU-1')}" in error["message"]
        assert error["details"] == {"field": "productItemCode", "productId": pid(site, "SKU-1")}
    not_uuid = owner.get(f"/analytics/product/{site['id']}/overview", params={"productId": "SKU-1"})
    assert not_uuid.status_code == 400
    assert not_uuid.json()["error"]["details"]["productId"] == pid(site, "SKU-1")


@pytest.mark.parametrize(
    "path",
    [
        "/analytics/product/{site}/top-revenue",
        "/analytics/product/{site}/bought-together",
        "/analytics/product/{site}/added-to-cart-together",
        "/analytics/sites/{site}/products",
    ],
)
def test_removed_v1_routes_answer_404(app, owner, path):
    site = owner.make_site()
    response = owner.get(path.format(site=site["id"]), params={"productId": pid(site, "A")})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "ROUTE_REMOVED"
    assert path.format(site="{siteId}") not in owner.client.get("/openapi.json").json()["paths"]


def test_another_organisation_gets_403_and_writing_a_feed_needs_sites_write(app, owner, outsider, store):
    site = owner.make_site()
    for route in ("catalog", "feeds-summary", "top", "tracking-status"):
        response = outsider.get(f"/analytics/product/{site['id']}/{route}")
        assert response.status_code == 403, route
    for route in ("overview", "dwell-time"):
        assert outsider.get(f"/analytics/product/{site['id']}/{route}",
                            params={"productId": pid(site, "A")}).status_code == 403  # fmt: skip
    # The organisation check comes before the productItemCode rule.
    assert outsider.get(f"/analytics/product/{site['id']}/overview",
                        params={"productItemCode": "A"}).status_code == 403  # fmt: skip
    assert post_feed(outsider, site, "code\nA", "text/csv").status_code == 403
    from tests.factories import make_user

    analyst = Session(
        owner.client, make_user(store, role="analyst", organization_id=owner.user["organization_id"])
    )
    assert analyst.get(f"/analytics/product/{site['id']}/catalog").status_code == 200
    refused = post_feed(analyst, site, "code\nA", "text/csv")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "PERMISSION_DENIED"


def test_an_order_at_every_amount_limit_reads_back_exactly(app, owner):
    # 2,000 lines (the limit) of 10^6 units (the limit) at just under 10^17: 2e29 of line revenue,
    # past the 28 digits Python's default decimal context keeps.
    site = owner.make_site(timezone="UTC")
    price = "99999999999999999"
    lines = [("BIG", 1_000_000, price, {"categoryPath": "Big"})] * 2000
    now = datetime.now(UTC) - timedelta(minutes=1)
    body = {
        **order("big-1", "v1", "s1", "09:00:00", "EUR", lines),
        "total": price,
        "timestamp": now.isoformat(),
    }
    assert owner.post("/analytics/track/order", json={"siteId": site["id"], **body}).status_code == 201
    app.state.ingest.flush()
    revenue = "199999999999999998000000000.00"
    today = now.date().isoformat()
    top = owner.get(f"/analytics/product/{site['id']}/top", params={"startDate": today, "endDate": today})
    assert top.status_code == 200, top.text
    assert [(p["revenue"], p["units"]) for p in top.json()["products"]] == [(revenue, 2_000_000_000)]
    one = owner.get(f"/analytics/product/{site['id']}/overview",
                    params={"startDate": today, "endDate": today, "productId": pid(site, "BIG")})  # fmt: skip
    assert one.status_code == 200, one.text
    assert revenue in one.text
    for path in ("top", "overview", "all", "conversion", "trends"):
        response = owner.get(f"/analytics/category/{site['id']}/{path}", params={"days": 30})
        assert response.status_code == 200, (path, response.text)
    overview = owner.get(f"/analytics/category/{site['id']}/overview", params={"categoryPath": "Big"}).json()
    assert overview["revenueByCurrency"] == [
        {"currency": "EUR", "revenue": revenue, "orders": 1, "avgOrderValue": revenue}
    ]
    assert overview["revenue"] == {"amount": revenue, "currency": "EUR", "mixed": False}


def test_order_line_codes_are_trimmed_like_event_codes(app, owner):
    site = owner.make_site(timezone="UTC")
    view = {"siteId": site["id"], "events": [event("product_view", "a", "sa", "09:00:00", "123")]}
    assert owner.post("/analytics/track/batch", json=view).json()["rejected"] == []
    lines = [(" 123 ", 1, "10.00"), ("\t123", 2, "10.00")]
    assert (
        owner.post(
            "/analytics/track/order",
            json={"siteId": site["id"], **order("o1", "b", "sb", "09:05:00", "EUR", lines)},
        ).status_code
        == 201
    )
    blank = order("o2", "b", "sb", "09:06:00", "EUR", [("   ", 1, "10.00")])
    refused = owner.post("/analytics/track/order", json={"siteId": site["id"], **blank})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "INVALID_ORDER")
    app.state.ingest.flush()
    top = owner.get(f"/analytics/product/{site['id']}/top", params=DAY)
    assert top.status_code == 200, top.text
    assert [
        (p["productItemCode"], p["productId"], p["units"], p["views"]) for p in top.json()["products"]
    ] == [("123", pid(site, "123"), 3, 1)]
    assert owner.get(f"/analytics/product/{site['id']}/catalog").status_code == 200


def test_a_line_naming_only_a_product_id_is_that_product_over_http(app, owner):
    site = owner.make_site(timezone="UTC")
    loose = "0a0b0c0d-0000-4000-8000-0000000000ff"  # a productId no code derives to
    view = {"siteId": site["id"], "events": [event("product_view", "a", "sa", "09:00:00", "A", name="Apple")]}
    assert owner.post("/analytics/track/batch", json=view).json()["rejected"] == []
    body = order("o1", "b", "sb", "09:05:00", "EUR", [("A", 1, "10.00")])
    body["items"] += [{"productId": pid(site, "A"), "quantity": 2, "price": "10.00"},
                      {"productId": loose, "quantity": 1, "price": "3.00"}]  # fmt: skip
    assert owner.post("/analytics/track/order", json={"siteId": site["id"], **body}).status_code == 201
    app.state.ingest.flush()
    base = f"/analytics/product/{site['id']}"
    top = owner.get(f"{base}/top", params=DAY)
    assert top.status_code == 200, top.text
    rows = top.json()["products"]
    assert [(p["productItemCode"], p["productId"], p["name"], p["units"], p["revenue"]) for p in rows] == [
        ("A", pid(site, "A"), "Apple", 3, "30.00"),
        (None, loose, None, 1, "3.00"),
    ]  # fmt: skip
    overview = owner.get(f"{base}/overview", params={**DAY, "productId": pid(site, "A")}).json()
    assert (overview["purchases"], overview["unitsSold"], overview["revenue"]["amount"]) == (1, 3, "30.00")
    related = owner.get(
        f"{base}/associations", params={**DAY, "productId": pid(site, "A"), "source": "purchase"}
    )
    assert related.status_code == 200, related.text
    assert [(a["productItemCode"], a["productId"], a["name"]) for a in related.json()["associations"]] == [
        (None, loose, None)
    ]


def test_a_product_named_only_by_its_product_id_has_routes_and_names(app, owner):
    """LOOSE: a productId no code derives to, named by code-less lines only; C: a feed product whose
    lines in the range name only its productId. Clicking through a top row answers, never 404."""
    site = owner.make_site(timezone="UTC")
    loose = "0a0b0c0d-0000-4000-8000-0000000000ff"
    assert post_feed(owner, site, "productItemCode,name\nC,Cherry\n", "text/csv").status_code == 200
    view = {
        "siteId": site["id"],
        "events": [event("product_view", "v1", "s1", "09:00:00", "A", name="Apple")],
    }
    assert owner.post("/analytics/track/batch", json=view).json()["rejected"] == []
    before = datetime.now(UTC)
    o1 = order("o1", "v1", "s1", "09:05:00", "EUR", [("A", 1, "10.00")])
    o1["items"].append(
        {"productId": loose, "quantity": 1, "price": "3.00", "name": "Loose tea", "categoryPath": "Tea"}
    )
    o2 = order("o2", "v2", "s2", "09:10:00", "USD", [])
    o2["items"] = [{"productId": loose, "quantity": 2, "price": "4.00", "name": "Loose leaf tea"},
                   {"productId": pid(site, "C"), "quantity": 1, "price": "6.00"}]  # fmt: skip
    o2["total"] = "14.00"
    # A refund gives no price, but it was seen: the last time the product was.
    r1 = order("r1", "v2", "s2", "10:00:00", "USD", [], isRefund=True, refundOf="o2")
    r1["items"], r1["total"] = [{"productId": loose, "quantity": -1, "price": "3.50"}], "-3.50"
    for body in (o1, o2, r1):
        response = owner.post("/analytics/track/order", json={"siteId": site["id"], **body})
        assert response.status_code == 201, response.text
    app.state.ingest.flush()
    after = datetime.now(UTC)
    base = f"/analytics/product/{site['id']}"

    top = owner.get(f"{base}/top", params=DAY).json()
    assert [(p["currency"], p["productItemCode"], p["productId"], p["name"], p["units"], p["revenue"])
            for p in top["products"]] == [
        ("EUR", "A", pid(site, "A"), "Apple", 1, "10.00"),
        ("EUR", None, loose, "Loose leaf tea", 1, "3.00"),
        ("USD", None, loose, "Loose leaf tea", 2, "8.00"),
        ("USD", None, pid(site, "C"), "Cherry", 1, "6.00"),
    ]  # fmt: skip

    overview = owner.get(f"{base}/overview", params={**DAY, "productId": loose})
    assert overview.status_code == 200, overview.text
    body = overview.json()
    product = body.pop("product")
    assert before <= datetime.fromisoformat(product.pop("updatedAt")) <= after
    assert product == {
        "productId": loose, "productItemCode": None, "name": "Loose leaf tea", "price": "4.00", "currency": "USD",
        "categories": ["Tea"], "stock": None, "url": None, "image": None, "inFeed": False, "seenInEvents": True,
        "firstSeenAt": "2024-03-01T09:05:00Z", "lastSeenAt": "2024-03-01T10:00:00Z",
    }  # fmt: skip
    assert {k: v for k, v in body.items() if k != "range"} == {
        "views": 0, "uniqueViewers": 0, "addToCarts": 0, "addToCartPeople": 0, "purchases": 2, "unitsSold": 3,
        "buyers": 2, "people": 2, "viewToCartRate": 0.0, "conversionRate": 0.0,
        "revenueByCurrency": [
            {"currency": "EUR", "revenue": "3.00", "orders": 1, "units": 1},
            {"currency": "USD", "revenue": "8.00", "orders": 1, "units": 2},
        ],
        "revenue": {"amount": None, "currency": None, "mixed": True},
    }  # fmt: skip

    dwell = owner.get(f"{base}/dwell-time", params={**DAY, "productId": loose})
    assert dwell.status_code == 200, dwell.text
    assert (dwell.json()["product"], dwell.json()["events"]) == (
        {"productId": loose, "productItemCode": None, "name": "Loose leaf tea"},
        0,
    )

    # Baskets o1 {A, LOOSE} and o2 {LOOSE, C}: N=2, |LOOSE|=2; A and C each together 1, in 1 basket.
    related = owner.get(f"{base}/associations", params={**DAY, "productId": loose, "source": "purchase"})
    assert related.status_code == 200, related.text
    assert [(a["productItemCode"], a["productId"], a["name"], a["together"], a["basketsWithProduct"],
             a["support"], a["confidence"], a["lift"]) for a in related.json()["associations"]] == [
        ("A", pid(site, "A"), "Apple", 1, 1, 0.5, 0.5, 1.0),
        (None, pid(site, "C"), "Cherry", 1, 1, 0.5, 0.5, 1.0),
    ]  # fmt: skip
    from_a = owner.get(
        f"{base}/associations", params={**DAY, "productId": pid(site, "A"), "source": "purchase"}
    )
    assert [(a["productId"], a["name"]) for a in from_a.json()["associations"]] == [(loose, "Loose leaf tea")]

    # A productId that nothing names is still not found.
    nothing = owner.get(
        f"{base}/overview", params={**DAY, "productId": "0a0b0c0d-0000-4000-8000-0000000000fe"}
    )
    assert nothing.status_code == 404 and nothing.json()["error"]["code"] == "PRODUCT_NOT_FOUND"
    spec = owner.client.get("/openapi.json").json()["paths"]
    for route in ("overview", "dwell-time", "associations"):
        described = spec[f"/api/v1/analytics/product/{{siteId}}/{route}"]["get"]["description"]
        assert "answered with a product made from those lines" in described, route


def test_associations_name_products_first_sold_after_the_last_catalog_read(app, owner):
    site = owner.make_site(timezone="UTC")
    sold = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": [
        event("product_view", "v1", "s1", "09:00:00", "A", name="Apple")]})  # fmt: skip
    assert sold.status_code == 200, sold.text
    app.state.ingest.flush()
    assert (
        owner.get("/analytics/product/{}/catalog".format(site["id"])).json()["total"] == 1
    )  # the catalog read
    body = order(
        "o1", "v1", "s1", "09:10:00", "EUR", [("A", 1, "10.00"), ("E", 1, "4.00", {"name": "Elderberry"})]
    )
    assert owner.post("/analytics/track/order", json={"siteId": site["id"], **body}).status_code == 201
    app.state.ingest.flush()
    response = owner.get(f"/analytics/product/{site['id']}/associations",
                         params={"productId": pid(site, "A"), "source": "purchase", **DAY})  # fmt: skip
    assert response.status_code == 200, response.text
    # E is newer than the catalog's last read: the route reads what arrived since, as top does.
    assert [(r["productItemCode"], r["name"]) for r in response.json()["associations"]] == [
        ("E", "Elderberry")
    ]
