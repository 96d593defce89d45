"""Category analytics: exact numbers on a tiny hand-built shop (a parent covers its children, `unknown`
for events without a category, sales per currency with JPY never showing decimals, refunds apart)."""

from __future__ import annotations

from datetime import date

from ingest.category_paths import normalise_path
from queries.categories import (
    CategoryQuery,
    category_conversion,
    category_filters,
    category_overview,
    category_paths,
    category_products,
    category_tree,
    category_trends,
    top_categories,
)
from tests.queries.helpers import SITE, journeys_for
from warehouse.config_store.product_identity import product_id_for

KITCHEN = "Home > Kitchen"


def at(day: int, clock: str) -> str:
    return f"2024-03-{day:02d}T{clock}Z"


def cat(event: str, day: int, clock: str, path: str | None, session: str, **metadata) -> dict:
    meta = {"categoryPath": path, **metadata} if path is not None else metadata
    return {"event": event, "at": at(day, clock), "sessionId": session, "metadata": meta}


def product(event: str, day: int, clock: str, code: str, path: str | None, session: str) -> dict:
    meta = {"productItemCode": code, "name": f"Name {code}"}
    if path is not None:
        meta["categoryPath"] = path
    return {"event": event, "at": at(day, clock), "sessionId": session, "metadata": meta}


def order(order_id: str, day: int, clock: str, currency: str, *lines: tuple[str, int, str, str | None],
          **extra) -> dict:  # fmt: skip
    items = [{"productItemCode": code, "quantity": qty, "price": price,
              **({"categoryPath": path} if path else {})} for code, qty, price, path in lines]  # fmt: skip
    total = sum(int(q) * float(p) for _, q, p, _ in lines)
    return {"order": order_id, "at": at(day, clock), "currency": currency, "total": f"{total:.2f}",
            "items": items, **extra}  # fmt: skip


def shop(ingest) -> None:
    """ann browses Home, then Kitchen, filters, views and adds P1, and buys it (with a Garden line);
    her order is later refunded, which changes nothing. bob walks Garden → (no category) → Kitchen and
    buys the next day in USD and twice in JPY. cy bought in Kitchen before she ever viewed it."""
    journeys_for(ingest, {
        "ann": [
            cat("category_view", 1, "10:00:00", "Home", "s-ann"),
            cat("category_view", 1, "10:01:00", "Home>Kitchen", "s-ann"),
            cat("category_filter", 1, "10:02:00", KITCHEN, "s-ann", filterName="color", filterValue="red"),
            product("product_view", 1, "10:03:00", "P1", KITCHEN, "s-ann"),
            product("add_to_cart", 1, "10:04:00", "P1", KITCHEN, "s-ann"),
            order("o1", 1, "10:05:00", "EUR", ("P1", 2, "4.50", KITCHEN), ("P9", 1, "5.00", "Garden")),
            order("r1", 1, "18:00:00", "EUR", ("P1", -2, "4.50", KITCHEN), isRefund=True, refundOf="o1"),
        ],
        "bob": [
            cat("category_view", 1, "11:00:00", "Garden", "s-bob"),
            cat("category_filter", 1, "11:00:30", "Garden", "s-bob", filter="price"),
            cat("category_view", 1, "11:01:00", None, "s-bob"),
            cat("category_view", 1, "11:02:00", KITCHEN, "s-bob"),
            product("product_view", 1, "11:03:00", "P2", None, "s-bob"),
            order("o2", 2, "09:00:00", "USD", ("P1", 1, "10.00", KITCHEN)),
            order("o3", 2, "09:30:00", "JPY", ("P3", 3, "1000", "Home")),
            order("o5", 2, "09:40:00", "JPY", ("P4", 1, "1001", KITCHEN)),
        ],
        "cy": [
            order("o4", 1, "12:00:00", "EUR", ("P1", 1, "4.50", KITCHEN)),
            cat("category_view", 2, "08:00:00", KITCHEN, "s-cy"),
        ],
    })  # fmt: skip


def query(path: str | None = None, start: int = 1, end: int = 2, timezone: str = "UTC") -> CategoryQuery:
    return CategoryQuery(site_id=SITE, start_date=date(2024, 3, start), end_date=date(2024, 3, end),
                         timezone=timezone, category_path=path)  # fmt: skip


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json")


def money(currency: str, revenue: str, orders: int, average: str) -> dict:
    return {"currency": currency, "revenue": revenue, "orders": orders, "avgOrderValue": average}


HOME_REVENUE = [
    money("EUR", "13.50", 2, "6.75"),
    money("JPY", "4001", 2, "2000"),
    money("USD", "10.00", 1, "10.00"),
]


def test_paths_are_normalised():
    assert normalise_path(" Home>Kitchen  >  Mugs ") == "Home > Kitchen > Mugs"
    # Blank parts dropped, as category_path_of drops them from stored paths.
    assert normalise_path("Home>>Kitchen") == normalise_path(" > Home > Kitchen >") == "Home > Kitchen"
    assert normalise_path(" > > ") == ""


def test_overview_of_a_parent_covers_its_children(lake):
    ingest, engine = lake
    shop(ingest)
    body = dump(category_overview(engine, query("Home")))
    assert body["totals"] == {
        "categoryViews": 4, "viewers": 3, "sessions": 3, "filterUses": 1, "productViews": 1, "addToCarts": 1,
        "categories": 2, "orders": 5, "unitsSold": 8,
    }  # fmt: skip
    assert body["revenueByCurrency"] == HOME_REVENUE
    assert body["revenue"] == {"amount": None, "currency": None, "mixed": True}
    assert [c["categoryPath"] for c in body["topCategories"]] == [KITCHEN, "Home"]
    assert body["scope"]["categoryPath"] == "Home"


def test_overview_of_one_currency_has_a_total(lake):
    ingest, engine = lake
    shop(ingest)
    body = dump(category_overview(engine, query("Garden")))
    assert body["revenueByCurrency"] == [money("EUR", "5.00", 1, "5.00")]
    assert body["revenue"] == {"amount": "5.00", "currency": "EUR", "mixed": False}


def test_conversion_counts_viewers_who_bought_after_viewing(lake):
    ingest, engine = lake
    shop(ingest)
    metrics = dump(category_conversion(engine, query("Home")))["metrics"]
    # ann and bob bought after their first view; cy's only order came before hers.
    assert metrics == {
        "viewers": 3, "productViewers": 1, "cartAdders": 1, "buyers": 3, "convertedViewers": 2,
        "conversionRate": 0.666667, "orders": 5, "unitsSold": 8, "revenueByCurrency": HOME_REVENUE,
        "revenue": {"amount": None, "currency": None, "mixed": True},
    }  # fmt: skip


def test_events_without_a_category_count_under_unknown(lake):
    ingest, engine = lake
    shop(ingest)
    metrics = dump(category_overview(engine, query("unknown")))["totals"]
    assert (metrics["categoryViews"], metrics["productViews"], metrics["orders"]) == (1, 1, 0)


def test_top_categories_by_their_own_path(lake):
    ingest, engine = lake
    shop(ingest)
    rows = dump(top_categories(engine, query(), limit=10))["categories"]
    assert [(r["categoryPath"], r["categoryViews"], r["orders"]) for r in rows] == [
        (KITCHEN, 3, 4), ("Garden", 1, 1), ("Home", 1, 1), ("unknown", 1, 0),
    ]  # fmt: skip
    assert rows[0] == {
        "categoryPath": KITCHEN, "parentPath": "Home", "depth": 2, "categoryViews": 3, "viewers": 3,
        "filterUses": 1, "productViews": 1, "addToCarts": 1, "orders": 4, "unitsSold": 5, "buyers": 3,
        "revenueByCurrency": [money("EUR", "13.50", 2, "6.75"), money("JPY", "1001", 1, "1001"),
                              money("USD", "10.00", 1, "10.00")],
    }  # fmt: skip
    assert len(dump(top_categories(engine, query(), limit=2))["categories"]) == 2


def test_the_tree_rolls_children_up_into_parents(lake):
    ingest, engine = lake
    shop(ingest)
    nodes = {n["categoryPath"]: n for n in dump(category_tree(engine, query()))["categories"]}
    assert list(nodes) == ["Garden", "Home", KITCHEN, "unknown"]
    home = nodes["Home"]
    assert (home["parentPath"], home["depth"]) == (None, 1)
    assert (home["own"]["categoryViews"], home["own"]["viewers"], home["own"]["orders"]) == (1, 1, 1)
    assert (home["total"]["categoryViews"], home["total"]["viewers"], home["total"]["orders"]) == (4, 3, 5)
    assert home["total"]["revenueByCurrency"] == HOME_REVENUE
    # Within the Kitchen subtree, Home (its ancestor) is no node.
    assert [n["categoryPath"] for n in dump(category_tree(engine, query(KITCHEN)))["categories"]] == [KITCHEN]


def test_products_of_a_category(lake):
    ingest, engine = lake
    shop(ingest)
    rows = dump(category_products(engine, query(), limit=10))["products"]
    assert [r["productItemCode"] for r in rows] == ["P1", "P2", "P3", "P4", "P9"]
    assert rows[0] == {
        "productId": str(product_id_for(SITE, "P1")), "productItemCode": "P1", "name": "Name P1", "views": 1,
        "viewers": 1, "clicks": 0, "addToCarts": 1, "orders": 3, "unitsSold": 4, "buyers": 3,
        "viewersWhoBought": 1, "viewToPurchaseRate": 1.0,
        "revenueByCurrency": [money("EUR", "13.50", 2, "6.75"), money("USD", "10.00", 1, "10.00")],
    }  # fmt: skip
    assert rows[2]["revenueByCurrency"] == [money("JPY", "3000", 1, "3000")]
    garden = dump(category_products(engine, query("Garden"), limit=10))["products"]
    assert [(r["productItemCode"], r["orders"]) for r in garden] == [("P9", 1)]


def test_trends_per_local_day(lake):
    ingest, engine = lake
    shop(ingest)
    days = dump(category_trends(engine, query(start=1, end=3)))["days"]
    assert days == [
        {"date": "2024-03-01", "categoryViews": 5, "viewers": 2, "productViews": 2, "addToCarts": 1, "orders": 2,
         "revenueByCurrency": [money("EUR", "18.50", 2, "9.25")]},
        {"date": "2024-03-02", "categoryViews": 1, "viewers": 1, "productViews": 0, "addToCarts": 0, "orders": 3,
         "revenueByCurrency": [money("JPY", "4001", 2, "2000"), money("USD", "10.00", 1, "10.00")]},
        {"date": "2024-03-03", "categoryViews": 0, "viewers": 0, "productViews": 0, "addToCarts": 0, "orders": 0,
         "revenueByCurrency": []},
    ]  # fmt: skip


def test_trends_use_the_site_time_zone(lake):
    ingest, engine = lake
    shop(ingest)
    # In Tokyo (UTC+9) bob's 09:00 UTC orders of 2 March fall on the 2nd at 18:00 local; cy's view at
    # 08:00 UTC too; ann's 10:00 UTC events of 1 March at 19:00 local on the 1st.
    days = dump(category_trends(engine, query(start=1, end=2, timezone="Asia/Tokyo")))["days"]
    assert [(d["date"], d["categoryViews"], d["orders"]) for d in days] == [
        ("2024-03-01", 5, 2), ("2024-03-02", 1, 3),
    ]  # fmt: skip
    # Los Angeles (UTC-8): 1 March 10:00 UTC is 02:00 local on the 1st; the range of the 2nd alone keeps
    # bob's orders (01:00–01:40 local) and cy's view (00:00 local).
    days = dump(category_trends(engine, query(start=2, end=2, timezone="America/Los_Angeles")))["days"]
    assert [(d["date"], d["categoryViews"], d["orders"]) for d in days] == [("2024-03-02", 1, 3)]


def test_filters_used(lake):
    ingest, engine = lake
    shop(ingest)
    body = dump(category_filters(engine, query(), limit=10))
    assert body["totalUses"] == 2
    assert body["filters"] == [
        {"filter": "color", "value": "red", "uses": 1, "people": 1, "categories": 1},
        {"filter": "price", "value": None, "uses": 1, "people": 1, "categories": 1},
    ]
    assert dump(category_filters(engine, query("Home"), limit=1))["totalUses"] == 1
    assert dump(category_filters(engine, query(), limit=1))["totalUses"] == 2


def test_paths_between_categories(lake):
    ingest, engine = lake
    shop(ingest)
    rows = dump(category_paths(engine, query(), limit=10))["transitions"]
    assert [(r["fromPath"], r["toPath"], r["transitions"], r["share"]) for r in rows] == [
        ("Garden", "unknown", 1, 1.0), ("Home", KITCHEN, 1, 1.0), ("unknown", KITCHEN, 1, 1.0),
    ]  # fmt: skip
    rows = dump(category_paths(engine, query("Garden"), limit=10))["transitions"]
    assert [(r["fromPath"], r["toPath"]) for r in rows] == [("Garden", "unknown")]


def test_paths_fold_repeated_views_and_share_what_leaves_a_category(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [cat("category_view", 1, "10:00:00", "A", "s1"), cat("category_view", 1, "10:01:00", "A", "s1"),
                cat("category_view", 1, "10:02:00", "B", "s1"), cat("category_view", 1, "10:03:00", "A", "s1"),
                cat("category_view", 1, "10:04:00", "C", "s1")],
        "eve": [cat("category_view", 1, "10:00:00", "A", "s2"), cat("category_view", 1, "10:01:00", "B", "s2")],
    })  # fmt: skip
    rows = dump(category_paths(engine, query(), limit=10))["transitions"]
    assert [(r["fromPath"], r["toPath"], r["transitions"], r["sessions"], r["people"], r["share"]) for r in rows] == [
        ("A", "B", 2, 2, 2, 0.666667), ("A", "C", 1, 1, 1, 0.333333), ("B", "A", 1, 1, 1, 1.0),
    ]  # fmt: skip


def test_a_product_keeps_its_latest_known_name(lake):
    ingest, engine = lake
    later = {
        "event": "product_view",
        "at": at(1, "10:01:00"),
        "sessionId": "s",
        "metadata": {"productItemCode": "P7"},
    }
    journeys_for(ingest, {"ann": [product("product_view", 1, "10:00:00", "P7", None, "s"), later]})
    rows = dump(category_products(engine, query(), limit=10))["products"]
    assert [(r["productItemCode"], r["name"], r["views"]) for r in rows] == [("P7", "Name P7", 2)]


def test_blank_parts_of_a_stored_path_are_dropped(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [
            cat("category_view", 1, "10:00:00", "Home>>Kitchen", "s-dee"),
            cat("category_view", 1, "10:01:00", " > Home >", "s-dee"),
            cat("category_view", 1, "10:02:00", ">", "s-dee"),
            order("o6", 1, "10:05:00", "EUR", ("P1", 1, "4.50", "Home >\tKitchen>")),
        ],
    })  # fmt: skip
    rows = dump(top_categories(engine, query(), limit=10))["categories"]
    assert [(r["categoryPath"], r["categoryViews"], r["orders"]) for r in rows] == [
        (KITCHEN, 1, 1), ("Home", 1, 0), ("unknown", 1, 0),
    ]  # fmt: skip
    steps = dump(category_paths(engine, query(), limit=10))
    assert [(r["fromPath"], r["toPath"]) for r in steps["transitions"]] == [
        ("Home", "unknown"),
        (KITCHEN, "Home"),
    ]


def test_a_line_naming_only_a_product_id_is_that_product(lake):
    """ann views P5 and buys it by its productId only; bob buys it by code, and LOOSE, a productId no
    code derives to: P5 is one product (its viewer bought it), LOOSE another, without a code."""
    ingest, engine = lake
    p5, loose = str(product_id_for(SITE, "P5")), "0a0b0c0d-0000-4000-8000-0000000000ff"
    by_id = {"productId": p5, "quantity": 1, "price": "4.00", "categoryPath": KITCHEN}
    journeys_for(ingest, {
        "ann": [
            product("product_view", 1, "10:00:00", "P5", KITCHEN, "s-ann"),
            {"order": "o1", "at": at(1, "10:05:00"), "currency": "EUR", "total": "4.00", "items": [by_id]},
        ],
        "bob": [
            {"order": "o2", "at": at(1, "11:00:00"), "currency": "EUR", "total": "11.00", "items": [
                {"productItemCode": "P5", "quantity": 2, "price": "4.00", "categoryPath": KITCHEN},
                {"productId": loose, "quantity": 1, "price": "3.00", "name": "Loose tea", "categoryPath": KITCHEN},
            ]},
        ],
    })  # fmt: skip
    rows = dump(category_products(engine, query(KITCHEN), limit=10))["products"]
    assert rows == [
        {"productId": p5, "productItemCode": "P5", "name": "Name P5", "views": 1, "viewers": 1, "clicks": 0,
         "addToCarts": 0, "orders": 2, "unitsSold": 3, "buyers": 2, "viewersWhoBought": 1,
         "viewToPurchaseRate": 1.0, "revenueByCurrency": [money("EUR", "12.00", 2, "6.00")]},
        {"productId": loose, "productItemCode": None, "name": "Loose tea", "views": 0, "viewers": 0, "clicks": 0,
         "addToCarts": 0, "orders": 1, "unitsSold": 1, "buyers": 1, "viewersWhoBought": 0,
         "viewToPurchaseRate": 0.0, "revenueByCurrency": [money("EUR", "3.00", 1, "3.00")]},
    ]  # fmt: skip


def test_a_line_of_quantity_zero_bought_nothing(lake):
    """o1 lists a Garden product with quantity 0 beside a Kitchen one: Garden sold nothing."""
    ingest, engine = lake
    journeys_for(ingest, {"ann": [order("o1", 1, "10:00:00", "EUR", ("P9", 0, "5.00", "Garden"),
                                        ("P1", 1, "4.50", KITCHEN))]})  # fmt: skip
    garden = dump(category_overview(engine, query("Garden")))
    assert (garden["totals"]["orders"], garden["totals"]["unitsSold"], garden["revenueByCurrency"]) == (
        0,
        0,
        [],
    )
    assert dump(category_products(engine, query("Garden"), limit=10))["products"] == []
    home = dump(category_overview(engine, query("Home")))
    assert home["totals"]["orders"] == 1
    assert home["revenueByCurrency"] == [money("EUR", "4.50", 1, "4.50")]


def test_a_category_event_whose_path_names_none_is_its_entity(lake):
    """A categoryPath of only `>` and blanks names no category, as an empty one does: the event's
    entityId names it (such events counted under `unknown`); without an entityId it is `unknown`."""
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [
            {**cat("category_view", 1, "10:00:00", " > ", "s-dee"), "entityId": "Garden"},
            {**cat("category_filter", 1, "10:01:00", "  ", "s-dee", filterName="color"), "entityId": "Garden > Tools"},
            cat("category_view", 1, "10:02:00", ">", "s-dee"),
        ],
    })  # fmt: skip
    rows = dump(top_categories(engine, query(), limit=10))["categories"]
    assert [(r["categoryPath"], r["categoryViews"], r["filterUses"]) for r in rows] == [
        ("Garden", 1, 0), ("unknown", 1, 0), ("Garden > Tools", 0, 1),
    ]  # fmt: skip


def test_a_product_is_named_by_its_latest_name_that_is_not_empty(lake):
    """An empty name names nothing: P7's later `name: ""` keeps "Kettle"; P8's `productName` names it
    when its `name` is empty; P9, named by no event, takes its lines' latest non-empty name."""
    ingest, engine = lake

    def view(clock: str, code: str, **names) -> dict:
        return {"event": "product_view", "at": at(1, clock), "sessionId": "s",
                "metadata": {"productItemCode": code, "categoryPath": KITCHEN, **names}}  # fmt: skip

    journeys_for(ingest, {
        "ann": [
            view("10:00:00", "P7", name="Kettle"),
            view("10:01:00", "P7", name=""),
            view("10:02:00", "P8", name="", productName="Kessel"),
            view("10:03:00", "P9"),
            {"order": "o1", "at": at(1, "10:04:00"), "currency": "EUR", "total": "3.00", "items": [
                {"productItemCode": "P9", "quantity": 1, "price": "1.00", "name": "Mug", "categoryPath": KITCHEN},
            ]},
            {"order": "o2", "at": at(1, "10:05:00"), "currency": "EUR", "total": "1.00", "items": [
                {"productItemCode": "P9", "quantity": 1, "price": "1.00", "name": "", "categoryPath": KITCHEN},
            ]},
        ],
    })  # fmt: skip
    rows = dump(category_products(engine, query(), limit=10))["products"]
    # P7 has two views, P9 one and two orders, P8 one view.
    assert [(r["productItemCode"], r["name"]) for r in rows] == [
        ("P7", "Kettle"),
        ("P9", "Mug"),
        ("P8", "Kessel"),
    ]


def test_a_category_event_carrying_a_product_code_names_no_product(lake):
    """A category_view may carry a listing's featured product: that is no view, click, add or sale of
    it, so it neither lists the product nor names it (its `name` is the category's)."""
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [
            cat("category_view", 1, "10:00:00", KITCHEN, "s-ann", productItemCode="P6", name="Kitchen"),
            product("product_view", 1, "10:01:00", "P5", KITCHEN, "s-ann"),
            cat("category_view", 1, "10:02:00", KITCHEN, "s-ann", productItemCode="P5", name="Kitchen"),
        ],
    })  # fmt: skip
    rows = dump(category_products(engine, query(), limit=10))["products"]
    assert [(r["productItemCode"], r["name"], r["views"]) for r in rows] == [("P5", "Name P5", 1)]


def test_an_empty_filter_name_or_value_names_nothing(lake):
    """`filterName: ""` beside `filterType: "price"` is the price filter, `filterValue: ""` beside
    `value` that value; with nothing else, the filter is `unknown` and the value null."""
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [
            cat("category_filter", 1, "10:00:00", KITCHEN, "s", filterName="", filterType="price", filterValue="",
                value="10-20"),
            cat("category_filter", 1, "10:01:00", KITCHEN, "s", filterName="", filterValue=""),
        ],
    })  # fmt: skip
    assert dump(category_filters(engine, query(), limit=10))["filters"] == [
        {"filter": "price", "value": "10-20", "uses": 1, "people": 1, "categories": 1},
        {"filter": "unknown", "value": None, "uses": 1, "people": 1, "categories": 1},
    ]
