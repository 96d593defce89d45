"""Category analytics routes over HTTP: every route with exact numbers on a tiny shop (EUR, USD and JPY
sales kept apart, JPY without decimals, `unknown` for events without a category), 403, 400."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session, make_user
from warehouse.config_store.product_identity import product_id_for

pytestmark = pytest.mark.shared_app

KITCHEN = "Home > Kitchen"
ROUTES = ("overview", "top", "conversion", "products", "paths", "trends", "filters", "all")


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def shop(app, owner: Session) -> tuple[dict, datetime]:
    """ann browses Home → Kitchen, filters by colour, views and adds P1 and buys it in EUR with a line of
    Garden; bob browses Garden → a listing without category and buys in USD and twice in JPY."""
    site = owner.make_site(timezone="UTC")
    # Yesterday at noon UTC: inside the last 7 days, and every event on the same day.
    start = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)

    def ev(event: str, visitor: str, minute: int, **metadata) -> dict:
        return {"name": event, "visitorId": visitor, "sessionId": f"s-{visitor}",
                "timestamp": iso(start + timedelta(minutes=minute)), "metadata": metadata}  # fmt: skip

    events = [
        ev("category_view", "ann", 0, categoryPath="Home"),
        ev("category_view", "ann", 1, categoryPath=KITCHEN),
        ev("category_filter", "ann", 2, categoryPath=KITCHEN, filterName="color", filterValue="red"),
        ev("product_view", "ann", 3, productItemCode="P1", categoryPath=KITCHEN, name="Mug"),
        ev("add_to_cart", "ann", 4, productItemCode="P1", categoryPath=KITCHEN, name="Mug"),
        ev("category_view", "bob", 10, categoryPath="Garden"),
        ev("category_view", "bob", 11),
        ev("product_view", "bob", 12, productItemCode="P2"),
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    orders = [
        ("o1", "ann", 5, "EUR", [("P1", 2, "4.50", KITCHEN), ("P9", 1, "5.00", "Garden")]),
        ("o2", "bob", 13, "USD", [("P1", 1, "10.00", KITCHEN)]),
        ("o3", "bob", 14, "JPY", [("P3", 3, "1000", "Home")]),
        ("o4", "bob", 15, "JPY", [("P4", 1, "1001", KITCHEN)]),
    ]
    for order_id, visitor, minute, currency, lines in orders:
        items = [
            {"productItemCode": c, "quantity": q, "price": p, "categoryPath": path} for c, q, p, path in lines
        ]
        body = {"siteId": site["id"], "orderId": order_id, "visitorId": visitor, "sessionId": f"s-{visitor}",
                "timestamp": iso(start + timedelta(minutes=minute)), "currency": currency,
                "total": str(sum(q * float(p) for _, q, p, _ in lines)), "items": items}  # fmt: skip
        response = owner.post("/analytics/track/order", json=body)
        assert response.status_code == 201, response.text
    app.state.ingest.flush()
    return site, start


def money(currency: str, revenue: str, orders: int, average: str) -> dict:
    return {"currency": currency, "revenue": revenue, "orders": orders, "avgOrderValue": average}


def get(owner: Session, site: dict, route: str, **params) -> dict:
    response = owner.get(f"/analytics/category/{site['id']}/{route}", params={"days": 7, **params})
    assert response.status_code == 200, response.text
    return response.json()


MIXED = {"amount": None, "currency": None, "mixed": True}


def test_overview_conversion_top_and_all(app, owner):
    """The overview and conversion keep currencies apart; top ranks paths as named, all adds up."""
    site, _ = shop(app, owner)
    body = get(owner, site, "overview", categoryPath="Home")
    assert body["totals"] == {
        "categoryViews": 2, "viewers": 1, "sessions": 1, "filterUses": 1, "productViews": 1, "addToCarts": 1,
        "categories": 2, "orders": 4, "unitsSold": 7,
    }  # fmt: skip
    revenue = [
        money("EUR", "9.00", 1, "9.00"),
        money("JPY", "4001", 2, "2000"),
        money("USD", "10.00", 1, "10.00"),
    ]
    assert body["revenueByCurrency"] == revenue
    assert body["revenue"] == MIXED
    assert body["scope"]["categoryPath"] == "Home" and body["scope"]["timezone"] == "UTC"

    metrics = get(owner, site, "conversion", categoryPath="Home")["metrics"]
    assert metrics == {
        "viewers": 1, "productViewers": 1, "cartAdders": 1, "buyers": 2, "convertedViewers": 1,
        "conversionRate": 1.0, "orders": 4, "unitsSold": 7, "revenueByCurrency": revenue, "revenue": MIXED,
    }  # fmt: skip
    # The JPY amounts never carry decimals; a one-currency selection has a total.
    garden = get(owner, site, "conversion", categoryPath="Garden")["metrics"]
    assert garden["revenueByCurrency"] == [money("EUR", "5.00", 1, "5.00")]
    assert garden["revenue"] == {"amount": "5.00", "currency": "EUR", "mixed": False}
    assert (garden["viewers"], garden["convertedViewers"], garden["conversionRate"]) == (1, 0, 0.0)

    rows = get(owner, site, "top")["categories"]
    assert [(r["categoryPath"], r["categoryViews"], r["orders"]) for r in rows] == [
        (KITCHEN, 1, 3), ("Garden", 1, 1), ("Home", 1, 1), ("unknown", 1, 0),
    ]  # fmt: skip
    assert rows[0]["revenueByCurrency"] == [
        money("EUR", "9.00", 1, "9.00"), money("JPY", "1001", 1, "1001"), money("USD", "10.00", 1, "10.00"),
    ]  # fmt: skip
    assert len(get(owner, site, "top", limit=1)["categories"]) == 1

    nodes = get(owner, site, "all")["categories"]
    assert [(n["categoryPath"], n["parentPath"], n["depth"]) for n in nodes] == [
        ("Garden", None, 1), ("Home", None, 1), (KITCHEN, "Home", 2), ("unknown", None, 1),
    ]  # fmt: skip
    home = nodes[1]
    assert (home["own"]["categoryViews"], home["total"]["categoryViews"]) == (1, 2)
    assert (home["own"]["orders"], home["total"]["orders"], home["total"]["unitsSold"]) == (1, 4, 7)


def test_a_card_without_sales_is_zero_in_the_site_currency(app, owner):
    site = owner.make_site(timezone="UTC", currency="JPY")
    view = {"name": "category_view", "visitorId": "v", "sessionId": "s", "metadata": {"categoryPath": "Home"}}
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": [view]})
    assert response.json()["accepted"] == 1
    app.state.ingest.flush()
    overview = get(owner, site, "overview")
    conversion = get(owner, site, "conversion")["metrics"]
    for body in (overview, conversion):
        assert body["revenueByCurrency"] == []
        assert body["revenue"] == {"amount": "0", "currency": "JPY", "mixed": False}


def test_products_paths_trends_and_filters(app, owner):
    site, start = shop(app, owner)
    rows = get(owner, site, "products", categoryPath=KITCHEN)["products"]
    assert [r["productItemCode"] for r in rows] == ["P1", "P4"]
    assert rows[0] == {
        "productId": str(product_id_for(site["id"], "P1")), "productItemCode": "P1", "name": "Mug", "views": 1,
        "viewers": 1, "clicks": 0, "addToCarts": 1, "orders": 2, "unitsSold": 3, "buyers": 2,
        "viewersWhoBought": 1, "viewToPurchaseRate": 1.0,
        "revenueByCurrency": [money("EUR", "9.00", 1, "9.00"), money("USD", "10.00", 1, "10.00")],
    }  # fmt: skip
    unknown = get(owner, site, "products", categoryPath="unknown")["products"]
    assert [(r["productItemCode"], r["views"]) for r in unknown] == [("P2", 1)]

    transitions = get(owner, site, "paths")["transitions"]
    assert transitions == [
        {
            "fromPath": "Garden",
            "toPath": "unknown",
            "transitions": 1,
            "sessions": 1,
            "people": 1,
            "share": 1.0,
        },
        {"fromPath": "Home", "toPath": KITCHEN, "transitions": 1, "sessions": 1, "people": 1, "share": 1.0},
    ]

    days = get(owner, site, "trends")["days"]
    today = datetime.now(UTC).date()
    assert [d["date"] for d in days] == [(today - timedelta(days=n)).isoformat() for n in range(6, -1, -1)]
    assert days[5] == {
        "date": start.date().isoformat(), "categoryViews": 4, "viewers": 2, "productViews": 2, "addToCarts": 1,
        "orders": 4,
        "revenueByCurrency": [money("EUR", "14.00", 1, "14.00"), money("JPY", "4001", 2, "2000"),
                              money("USD", "10.00", 1, "10.00")],
    }  # fmt: skip
    assert [d["categoryViews"] + d["orders"] for i, d in enumerate(days) if i != 5] == [0] * 6

    body = get(owner, site, "filters")
    assert body == {
        "scope": body["scope"], "totalUses": 1,
        "filters": [{"filter": "color", "value": "red", "uses": 1, "people": 1, "categories": 1}],
    }  # fmt: skip


def test_other_organisations_and_missing_permission_get_403(client, store, app, owner, outsider):
    site, _ = shop(app, owner)
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    for route in ROUTES:
        path = f"/analytics/category/{site['id']}/{route}"
        assert outsider.get(path).status_code == 403
        assert viewer.get(path).status_code == 403
        assert client.get(path).status_code == 401


BAD_PARAMS = [
    {"days": 0}, {"days": 366}, {"days": "week"}, {"categoryPath": "  "}, {"categoryPath": " > >"},
    {"categoryPath": "x" * 501}, {"limit": 0}, {"limit": 501},
]  # fmt: skip


def test_the_selected_path_drops_blank_parts_as_stored_paths_do(app, owner):
    site, _ = shop(app, owner)
    assert get(owner, site, "overview", categoryPath="Home>>Kitchen > ") == get(
        owner, site, "overview", categoryPath="Home > Kitchen"
    )


def test_bad_parameters_answer_400(owner):
    site = owner.make_site()
    for params in BAD_PARAMS:
        route = "top" if "limit" in params else "overview"
        response = owner.get(f"/analytics/category/{site['id']}/{route}", params=params)
        assert response.status_code == 400, (params, response.text)
        assert set(response.json()["error"]) == {"code", "message", "details"}
