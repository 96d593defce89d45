"""The product catalog store on SQLite and PostgreSQL: exact prices, feed upserts, what events may
change, search and paging, counts and import history."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from tests.factories import make_store_site
from warehouse.config_store import products
from warehouse.config_store.product_identity import product_id_for
from warehouse.config_store.products import FeedProduct, SeenProduct

T1 = datetime(2024, 3, 1, 10, tzinfo=UTC)
T2 = datetime(2024, 3, 2, 10, tzinfo=UTC)


def stored(conn, site_id: str, code: str) -> dict:
    return products.by_codes(conn, site_id=site_id, codes=[code])[code]


def test_prices_are_exact_and_ids_deterministic(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        created, updated = products.upsert_feed(
            conn, site_id=site["id"], site_currency="EUR",
            rows=[FeedProduct("A", price=Decimal("0.1") + Decimal("0.2")), FeedProduct("B", price=Decimal("123456789012.345678"), currency="KWD"),
                  FeedProduct("C", price=Decimal("1200"), currency="JPY")],
        )  # fmt: skip
        assert (created, updated) == (3, 0)
    with store.connect() as conn:
        a, b, c = (stored(conn, site["id"], code) for code in "ABC")
    assert (a["price"], a["currency"]) == (Decimal("0.3"), "EUR")
    assert (b["price"], b["currency"]) == (Decimal("123456789012.345678"), "KWD")
    assert str(c["price"]) == "1200"
    assert a["product_id"] == str(product_id_for(site["id"], "A"))
    assert (a["in_feed"], a["categories"], a["last_seen_at"]) == (True, [], None)


def test_a_feed_row_changes_only_the_fields_it_gives(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        products.upsert_feed(conn, site_id=site["id"], site_currency="EUR", rows=[
            FeedProduct("A", name="Mug", price=Decimal("5"), currency="USD", categories=["Home"], stock=2, url="/a")
        ])  # fmt: skip
        assert products.upsert_feed(
            conn, site_id=site["id"], site_currency="EUR", rows=[FeedProduct("A", stock=0)]
        ) == (0, 1)
        # A price without a currency is in the site currency, even over a stored USD price.
        products.upsert_feed(
            conn, site_id=site["id"], site_currency="EUR", rows=[FeedProduct("A", price=Decimal(6))]
        )
    with store.connect() as conn:
        row = stored(conn, site["id"], "A")
    assert {k: row[k] for k in ("name", "price", "currency", "categories", "stock", "url")} == {
        "name": "Mug", "price": Decimal(6), "currency": "EUR", "categories": ["Home"], "stock": 0, "url": "/a"
    }  # fmt: skip


def test_events_fill_feed_products_and_replace_older_values_of_the_others(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        products.upsert_feed(
            conn, site_id=site["id"], site_currency="EUR", rows=[FeedProduct("F", name="Feed name")]
        )
        created = products.upsert_seen(conn, site_id=site["id"], site_currency="EUR", seen=[
            SeenProduct("F", T1, T2, name="Event name", price=Decimal("3"), currency="USD", category_path="A > B"),
            SeenProduct("E", T2, T2, name="Newest", url="https://shop.example.com/e"),
        ])  # fmt: skip
        assert created == 1
        # An older observation only fills what is empty; a newer one replaces.
        products.upsert_seen(conn, site_id=site["id"], site_currency="EUR", seen=[
            SeenProduct("E", T1, T1, name="Older", price=Decimal("2"), currency="GBP"),
        ])  # fmt: skip
    with store.connect() as conn:
        f, e = stored(conn, site["id"], "F"), stored(conn, site["id"], "E")
    assert {k: f[k] for k in ("name", "price", "currency", "categories", "first_seen_at", "last_seen_at")} == {
        "name": "Feed name", "price": Decimal(3), "currency": "USD", "categories": ["A > B"], "first_seen_at": T1,
        "last_seen_at": T2,
    }  # fmt: skip
    assert {k: e[k] for k in ("name", "price", "currency", "url", "in_feed", "first_seen_at")} == {
        "name": "Newest", "price": Decimal(2), "currency": "GBP", "url": "https://shop.example.com/e", "in_feed": False,
        "first_seen_at": T1,
    }  # fmt: skip
    with store.begin() as conn:
        products.upsert_seen(conn, site_id=site["id"], site_currency="EUR", seen=[
            SeenProduct("E", T2, datetime(2024, 3, 3, tzinfo=UTC), name="Renamed", price=Decimal("9"), currency="EUR")
        ])  # fmt: skip
        assert products.counts(conn, site_id=site["id"]) == {
            "products": 2, "from_feed": 1, "seen_only": 1, "feed_and_seen": 1
        }  # fmt: skip
    with store.connect() as conn:
        assert (stored(conn, site["id"], "E")["name"], stored(conn, site["id"], "E")["price"]) == (
            "Renamed",
            9,
        )


def test_search_paging_and_import_history(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        other = make_store_site(conn)
        products.upsert_feed(conn, site_id=site["id"], site_currency="EUR", rows=[
            FeedProduct("X-1", name="Blue 100% cotton"), FeedProduct("X-2", name="blue_mug"), FeedProduct("X-3"),
            FeedProduct("Y-1", name="Anchor"),
        ])  # fmt: skip
        products.upsert_feed(
            conn, site_id=other["id"], site_currency="EUR", rows=[FeedProduct("X-9", name="Blue")]
        )
        assert products.import_history(conn, site_id=site["id"]) == (None, 0, 0)
        products.record_import(conn, site_id=site["id"], source="api", format="csv", file_name=None, rows_read=5,
                               accepted=4, created_products=4, rejections={"byCode": {"INVALID_PRICE": 1}, "rows": []})  # fmt: skip
        products.record_import(conn, site_id=site["id"], source="cli", format="json", file_name="f.json",
                               rows_read=2, accepted=0, created_products=0,
                               rejections={"byCode": {"MISSING_PRODUCT_CODE": 2}, "rows": []})  # fmt: skip
    with store.connect() as conn:
        everything = products.list(conn, site_id=site["id"])
        assert (everything.total, [r["product_item_code"] for r in everything.rows]) == (
            4,
            ["Y-1", "X-1", "X-2", "X-3"],
        )
        page = products.list(conn, site_id=site["id"], offset=1, limit=2)
        assert (page.total, [r["product_item_code"] for r in page.rows]) == (4, ["X-1", "X-2"])
        assert [
            r["product_item_code"] for r in products.list(conn, site_id=site["id"], search="BLUE").rows
        ] == ["X-1", "X-2"]
        assert [
            r["product_item_code"] for r in products.list(conn, site_id=site["id"], search="100%").rows
        ] == ["X-1"]
        assert [
            r["product_item_code"] for r in products.list(conn, site_id=site["id"], search="e_m").rows
        ] == ["X-2"]
        assert [r["product_item_code"] for r in products.list(conn, site_id=site["id"], search="x-").rows] == [
            "X-1", "X-2", "X-3"
        ]  # fmt: skip
        last, number, refused = products.import_history(conn, site_id=site["id"])
    assert (last["source"], last["file_name"], number, refused) == ("cli", "f.json", 2, 3)


def test_a_code_stored_with_padding_is_the_same_product_as_its_trimmed_code(store):
    # Lakes written before order-line codes were trimmed hold " 123 " beside "123": one product id.
    with store.begin() as conn:
        site = make_store_site(conn)
        products.upsert_seen(
            conn, site_id=site["id"], site_currency="EUR", seen=[SeenProduct(" 123 ", T1, T1)]
        )
        created = products.upsert_seen(
            conn, site_id=site["id"], site_currency="EUR", seen=[SeenProduct("123", T2, T2, name="Mug")]
        )
    assert created == 0
    with store.connect() as conn:
        row = stored(conn, site["id"], "123")
        assert products.counts(conn, site_id=site["id"])["products"] == 1
    assert (row["product_id"], row["name"], row["last_seen_at"]) == (
        str(product_id_for(site["id"], "123")),
        "Mug",
        T2,
    )
