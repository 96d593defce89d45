"""Product feeds: one row at a time (aliases, prices with their currency, refusals by code), and
`aisle import --products` run for real."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from ingest.product_feed import FeedUnreadable, RowRefused, parse_row, read_feed
from tests.factories import make_store_site
from warehouse.config_store import products, sites
from warehouse.config_store.products import FeedProduct
from warehouse.config_store.store import create_store_engine, migrate


def test_a_row_is_read_through_its_aliases():
    row = parse_row({"SKU": " M-1 ", "Title": "Mug", "price": "15.00 USD", "product_type": "Home > Kitchen|Gifts",
                     "Stock Quantity": "4", "link": "https://shop.example.com/m-1", "image_link": "/img/m-1.jpg"})  # fmt: skip
    assert row == FeedProduct(
        product_item_code="M-1", name="Mug", price=Decimal("15.00"), currency="USD",
        categories=["Home > Kitchen", "Gifts"], stock=4, url="https://shop.example.com/m-1", image="/img/m-1.jpg",
    )  # fmt: skip
    # The first alias present wins; currency in lower case is normalised; categories as a list.
    row = parse_row(
        {"productItemCode": "X", "sku": "Y", "price": 2, "currency": "jpy", "categories": ["A>B"]}
    )
    assert (row.product_item_code, row.price, row.currency, row.categories) == (
        "X",
        Decimal(2),
        "JPY",
        ["A > B"],
    )
    assert parse_row({"code": "Z"}) == FeedProduct(product_item_code="Z")


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not an object", "ROW_NOT_OBJECT"),
        ({"name": "no code"}, "MISSING_PRODUCT_CODE"),
        ({"sku": "   "}, "MISSING_PRODUCT_CODE"),
        ({"sku": "x" * 256}, "INVALID_PRODUCT_CODE"),
        ({"sku": "A", "price": "-1"}, "INVALID_PRICE"),
        ({"sku": "A", "price": "1.0000001"}, "INVALID_PRICE"),
        ({"sku": "A", "price": "NaN"}, "INVALID_PRICE"),
        ({"sku": "A", "price": True}, "INVALID_PRICE"),
        ({"sku": "A", "price": "EUR 1 USD"}, "INVALID_PRICE"),
        ({"sku": "A", "currency": "XXY"}, "CURRENCY_NOT_ISO4217"),
        ({"sku": "A", "price": "1 USD", "currency": "EUR"}, "CURRENCY_CONFLICT"),
        ({"sku": "A", "stock": "1.5"}, "INVALID_STOCK"),
        ({"sku": "A", "stock": "many"}, "INVALID_STOCK"),
        ({"sku": "A", "url": "javascript:alert(1)"}, "INVALID_URL"),
        ({"sku": "A", "categories": [1, 2]}, "INVALID_CATEGORIES"),
        ({"sku": "A", "name": {"en": "Mug"}}, "INVALID_NAME"),
    ],
)
def test_bad_rows_are_refused_with_a_stable_code(raw, code):
    with pytest.raises(RowRefused) as refused:
        parse_row(raw)
    assert refused.value.code == code


def test_a_product_id_column_is_not_a_code_and_the_reason_says_so():
    with pytest.raises(RowRefused, match="productId is derived from it"):
        parse_row({"productId": "8c0d4f39-0000-0000-0000-000000000000"})


def test_rows_are_numbered_as_lines_or_positions():
    assert [n for n, _ in read_feed("code\nA\n\nB\n", "csv")] == [2, 4]
    assert [n for n, _ in read_feed('{"products": [{"code": "A"}, {"code": "B"}]}', "json")] == [1, 2]
    assert [n for n, _ in read_feed('{"code": "A"}\n\n{"code": "B"}\n', "jsonl")] == [1, 3]


def test_a_feed_that_cannot_be_read_as_a_whole_is_refused():
    huge = 'code\n"' + "a" * 200_000 + '"\n'
    for text, fmt in ((huge, "csv"), ('{"products": 1}', "json"), ("[1,", "json"), ("", "csv")):
        with pytest.raises(FeedUnreadable):
            list(read_feed(text, fmt))


@pytest.mark.slow
def test_the_cli_imports_a_feed_and_fills_the_site_currency(tmp_path):
    data_dir = tmp_path / "data"
    aisle = str(Path(sys.executable).parent / "aisle")
    store = create_store_engine(f"sqlite:///{data_dir / 'aisle.db'}")
    migrate(store)
    with store.begin() as conn:
        sites.update_fields(conn, site_id=(site := make_store_site(conn))["id"], currency="GBP")
    store.dispose()
    demo = {"siteId": site["id"]}
    feed = tmp_path / "feed.csv"
    feed.write_text("sku,title,price,currency\nM-1,Mug,12.5,\nM-2,Plate,800,JPY\nM-3,Bowl,cheap,\n")
    result = subprocess.run(
        [aisle, "import", "--products", "--site", demo["siteId"], str(feed), "--data-dir", str(data_dir)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {k: summary[k] for k in ("format", "rowsRead", "accepted", "created", "updated", "rejected")} == {
        "format": "csv", "rowsRead": 3, "accepted": 2, "created": 2, "updated": 0, "rejected": 1,
    }  # fmt: skip
    assert summary["rejections"] == [
        {"row": 4, "code": "INVALID_PRICE", "reason": "price 'cheap' is not a decimal number such as 19.99 or '19.99 EUR'"}
    ]  # fmt: skip
    store = create_store_engine(f"sqlite:///{data_dir / 'aisle.db'}")
    try:
        with store.connect() as conn:
            rows = products.list(conn, site_id=demo["siteId"]).rows
            history = products.import_history(conn, site_id=demo["siteId"])
    finally:
        store.dispose()
    site_currency = "GBP"
    assert [(r["product_item_code"], r["price"], r["currency"]) for r in rows] == [
        ("M-1", Decimal("12.5"), site_currency), ("M-2", Decimal(800), "JPY")
    ]  # fmt: skip
    assert (history[0]["source"], history[0]["file_name"], history[1], history[2]) == (
        "cli",
        "feed.csv",
        1,
        1,
    )

    unreadable = tmp_path / "feed.json"
    unreadable.write_text("[{")
    failed = subprocess.run(
        [aisle, "import", "--products", "--site", demo["siteId"], str(unreadable), "--data-dir", str(data_dir)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert failed.returncode == 2 and "not valid JSON" in failed.stderr
