"""Bulk import: the same validation as the API, a summary of rejected rows, the online-retail preset."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.event_names import CANONICAL_EVENT_NAMES
from ingest.importer import import_file
from ingest.service import DataDirBusy, Ingest
from tests.queries.helpers import is_retail_sale

# Every canonical event name, as a refusal of another lists them.
ALLOWED = ", ".join(sorted(CANONICAL_EVENT_NAMES))

SITE = {"id": "22222222-2222-2222-2222-222222222222", "currency": "EUR"}
RETAIL_HEAD = Path(__file__).resolve().parents[1] / "data" / "online-retail-head-3000.csv"
RETAIL_HEADER = "InvoiceNo,StockCode,Description,Quantity,InvoiceDate,UnitPrice,CustomerID,Country\n"


@pytest.fixture
def ingest(tmp_path):
    service = Ingest(data_dir=tmp_path / "data", flush_interval_seconds=3600)
    service.start()
    yield service
    service.stop()


def lake_rows(ingest: Ingest, table: str, sql: str = "SELECT * FROM t ORDER BY ALL") -> list[tuple]:
    glob = str(ingest.lake.table_dir(ingest.flushers[table].table) / "*" / "*" / "*.parquet")
    relation = duckdb.sql(f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true)")  # noqa: F841
    return duckdb.sql(sql.replace(" t ", " relation ")).fetchall()


def test_csv_events_are_validated_row_by_row(ingest, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "name,eventId,visitorId,sessionId,timestamp,metadata\n"
        "page_view,e1,v1,s1,2019-05-01T10:00:00Z,\n"
        'product_view,e2,v1,s1,2019-05-01T10:01:00Z,"{""productItemCode"": ""P-1""}"\n'
        "product_view,e3,v1,s1,2019-05-01T10:02:00Z,\n"
        "teleport,e4,v1,s1,2019-05-01T10:03:00Z,\n"
    )
    summary = import_file(ingest, site=SITE, path=path)
    assert summary.as_dict() == {
        "kind": "events", "rowsRead": 4, "stored": 2, "duplicates": 0,
        "rejected": {"MISSING_PRODUCT_CODE": 1, "UNKNOWN_EVENT_NAME": 1}, "rejectedTotal": 2,
        "examples": {
            "MISSING_PRODUCT_CODE": ["line 4: 'product_view' needs metadata.productItemCode"],
            "UNKNOWN_EVENT_NAME": [f"line 5: 'teleport' is not a canonical event name (allowed: {ALLOWED})"],
        },
    }  # fmt: skip
    rows = lake_rows(ingest, "events", "SELECT event_id, product_item_code, date::VARCHAR FROM t ORDER BY 1")
    assert rows == [("e1", None, "2019-05-01"), ("e2", "P-1", "2019-05-01")]


def test_importing_the_same_file_twice_stores_each_row_once(ingest, tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps({"name": "scroll", "eventId": f"e{i}", "visitorId": "v", "sessionId": "s"})
                              for i in range(5)))  # fmt: skip
    assert import_file(ingest, site=SITE, path=path).stored == 5
    again = import_file(ingest, site=SITE, path=path)
    assert (again.stored, again.duplicates) == (0, 5)
    assert lake_rows(ingest, "events", "SELECT count(*) FROM t ") == [(5,)]


def test_jsonl_orders_with_a_broken_line_and_a_bad_currency(ingest, tmp_path):
    good = {"orderId": "o1", "visitorId": "v", "sessionId": "s", "total": "10.50", "currency": "usd",
            "timestamp": "2020-02-02T12:00:00Z", "items": [{"productItemCode": "A", "quantity": 1, "price": "10.50"}]}  # fmt: skip
    bad_currency = {**good, "orderId": "o2", "currency": "DOLLARS"}
    path = tmp_path / "orders.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps(good) + "\n{not json\n" + json.dumps(bad_currency) + "\n")
    summary = import_file(ingest, site=SITE, path=path)
    assert (summary.kind, summary.rows_read, summary.stored) == ("orders", 3, 1)
    assert summary.rejected == {"INVALID_JSON": 1, "CURRENCY_NOT_ISO4217": 1}
    assert summary.examples["INVALID_JSON"][0].startswith("line 2: is not JSON: ")
    assert lake_rows(ingest, "orders", "SELECT order_id, currency, total FROM t ") == [
        ("o1", "USD", Decimal("10.500000"))
    ]


def test_a_row_of_the_other_kind_is_rejected_as_such_not_as_a_broken_row(ingest, tmp_path):
    event = {"name": "page_view", "eventId": "e1", "visitorId": "v", "sessionId": "s",
             "timestamp": "2020-02-02T12:00:00Z"}  # fmt: skip
    order = {"orderId": "o1", "visitorId": "v", "sessionId": "s", "total": "1", "timestamp": "2020-02-02T12:00:00Z",
             "items": [{"productItemCode": "A", "quantity": 1, "price": "1"}]}  # fmt: skip
    for rows, kind, stored, example in (
        ([event, order], "events", 1, "line 2: an order (it has orderId) in a file of events; "),
        ([order, event], "orders", 1, "line 2: an event (it has no orderId) in a file of orders; "),
    ):
        path = tmp_path / f"{kind}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        summary = import_file(ingest, site=SITE, path=path)
        assert (summary.kind, summary.stored, summary.rejected) == (kind, stored, {"WRONG_KIND": 1})
        assert summary.examples["WRONG_KIND"] == [
            example + "the first row decides a file's kind, so import events and orders as separate files"
        ]


def test_an_integer_past_64_bits_in_a_json_line_is_refused_not_stored_as_a_float(ingest, tmp_path):
    path = tmp_path / "events.jsonl"
    rows = [{"name": "scroll", "eventId": "big", "visitorId": "v", "sessionId": "s", "metadata": {"n": 2**64}},
            {"name": "scroll", "eventId": "ok", "visitorId": "v", "sessionId": "s", "metadata": {"n": 2**63 - 1}}]  # fmt: skip
    path.write_text("\n".join(json.dumps(row) for row in rows))
    summary = import_file(ingest, site=SITE, path=path)
    assert (summary.stored, summary.rejected) == (1, {"INVALID_EVENT": 1})
    assert "64 bits" in summary.examples["INVALID_EVENT"][0]
    assert lake_rows(ingest, "events", "SELECT event_id, metadata FROM t ") == [
        ("ok", '{"n":9223372036854775807}')
    ]


def test_a_csv_row_with_more_fields_than_the_header_is_rejected_as_such(ingest, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("name,eventId,visitorId,sessionId\npage_view,e1,v1,s1\npage_view,e2,v1,s1,extra,more\n")
    summary = import_file(ingest, site=SITE, path=path).as_dict()
    assert (summary["stored"], summary["rejected"]) == (1, {"INVALID_ROW": 1})
    assert summary["examples"]["INVALID_ROW"] == ["line 3: has 6 fields, the header 4"]


@pytest.mark.parametrize("name", ["events.csv", "events.jsonl", "events.csv.gz"])
def test_a_file_starting_with_a_byte_order_mark_is_read_as_without_one(ingest, tmp_path, name):
    """Excel's "CSV UTF-8" starts the file with one: every row was refused for lacking a name."""
    text = (
        "name,eventId,visitorId,sessionId\npage_view,e1,v1,s1\n"
        if ".csv" in name
        else '{"name": "page_view", "eventId": "e1", "visitorId": "v1", "sessionId": "s1"}\n'
    )
    data = b"\xef\xbb\xbf" + text.encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    summary = import_file(ingest, site=SITE, path=path)
    assert (summary.stored, summary.rejected) == (1, {})


@pytest.mark.parametrize(
    ("header", "needed"),
    [("name;eventId;visitorId;sessionId", "'name'"), ("nmae,eventId,visitorId,sessionId", "'name'")],
)
def test_a_csv_header_without_the_column_every_row_needs_refuses_the_file(ingest, tmp_path, header, needed):
    path = tmp_path / "events.csv"
    path.write_text(header + "\npage_view;e1;v1;s1\n")
    with pytest.raises(ValueError, match=f"the header has no {needed} column .*comma-separated"):
        import_file(ingest, site=SITE, path=path)
    orders = tmp_path / "orders.csv"
    orders.write_text("order,total\no1,5\n")
    with pytest.raises(ValueError, match="no 'orderId' column"):
        import_file(ingest, site=SITE, path=orders, kind="orders")
    assert not list(ingest.lake.root.rglob("*.parquet"))


def test_parquet_events(ingest, tmp_path):
    path = tmp_path / "events.parquet"
    pq.write_table(
        pa.table(
            {
                "name": ["page_view", "search_query"],
                "visitorId": ["v1", "v2"],
                "sessionId": ["s1", "s2"],
                "eventId": ["p1", "p2"],
            }
        ),  # fmt: skip
        path,
    )
    assert import_file(ingest, site=SITE, path=path).stored == 2


def test_the_summary_names_the_first_five_rejected_lines_of_each_reason(ingest, tmp_path):
    path = tmp_path / "events.jsonl"
    lines = [{"name": "teleport", "eventId": f"t{i}", "visitorId": "v", "sessionId": "s"} for i in range(7)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n[1]\n")
    summary = import_file(ingest, site=SITE, path=path).as_dict()
    assert summary["rejected"] == {"UNKNOWN_EVENT_NAME": 7, "EVENT_NOT_OBJECT": 1}
    assert summary["examples"] == {
        "UNKNOWN_EVENT_NAME": [
            f"line {n}: 'teleport' is not a canonical event name (allowed: {ALLOWED})" for n in range(1, 6)
        ],
        "EVENT_NOT_OBJECT": ["line 8: each event must be a JSON object"],
    }


def test_parquet_columns_of_any_type_are_read_as_the_api_would_carry_them(ingest, tmp_path):
    # A database export: integer ids, a timestamp column, an exact decimal, metadata as a struct.
    path = tmp_path / "export.parquet"
    at = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    pq.write_table(
        pa.table({
            "name": ["page_view", "purchase", "product_view"],
            "eventId": pa.array([1, 2, 3], pa.int64()),
            "visitorId": pa.array([10, 10, 11], pa.int64()),
            "sessionId": ["s1", "s1", "s2"],
            "timestamp": pa.array([at, at, at.replace(tzinfo=None)], pa.timestamp("us")),
            "value": pa.array([None, Decimal("19.99"), None], pa.decimal128(10, 2)),
            "metadata": pa.array([None, None, {"productItemCode": "P1"}], pa.struct([("productItemCode", pa.string())])),
        }),
        path,
    )  # fmt: skip
    summary = import_file(ingest, site=SITE, path=path).as_dict()
    assert (summary["stored"], summary["rejected"]) == (3, {})
    assert lake_rows(
        ingest,
        "events",
        "SELECT event_id, visitor_id, ts::VARCHAR, value, product_item_code FROM t ORDER BY 1",
    ) == [
        ("1", "10", "2024-05-01 10:00:00+00", None, None),
        ("2", "10", "2024-05-01 10:00:00+00", Decimal("19.990000"), None),
        ("3", "11", "2024-05-01 10:00:00+00", None, "P1"),
    ]


def test_parquet_money_in_single_precision_floats_is_the_amount_the_float_stands_for(ingest, tmp_path):
    """Widened to a double, 0.1 read as 0.10000000149..., refused as past a JSON number's digits."""
    path = tmp_path / "orders.parquet"
    item = pa.struct([("productItemCode", pa.string()), ("quantity", pa.int32()), ("price", pa.float32())])
    pq.write_table(
        pa.table({
            "orderId": ["o1", "o2"], "visitorId": ["v", "v"], "sessionId": ["s", "s"],
            "timestamp": ["2024-05-01T10:00:00Z"] * 2,
            "total": pa.array([0.1, 19.99], pa.float32()),
            "items": pa.array([[{"productItemCode": "A", "quantity": 1, "price": 0.1}],
                               [{"productItemCode": "B", "quantity": 1, "price": 19.99}]], pa.list_(item)),
        }),
        path,
    )  # fmt: skip
    summary = import_file(ingest, site=SITE, path=path)
    assert (summary.stored, summary.rejected) == (2, {})
    assert lake_rows(ingest, "orders", "SELECT order_id, total FROM t ORDER BY 1") == [
        ("o1", Decimal("0.100000")),
        ("o2", Decimal("19.990000")),
    ]


@pytest.mark.parametrize("content", ["", "name,eventId,visitorId,sessionId\n"])
def test_a_file_without_rows_is_an_error_not_an_empty_success(ingest, tmp_path, content):
    path = tmp_path / "events.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match="holds no rows"):
        import_file(ingest, site=SITE, path=path)


def test_unknown_format_is_refused(ingest, tmp_path):
    path = tmp_path / "events.xlsx"
    path.write_text("x")
    with pytest.raises(ValueError, match="cannot tell the format"):
        import_file(ingest, site=SITE, path=path)


def retail_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "retail.csv"
    path.write_text(RETAIL_HEADER + "\n".join(lines) + "\n")
    return path


def test_online_retail_one_order_per_invoice_with_refunds_kept_apart(ingest, tmp_path):
    path = retail_file(tmp_path, [
        "536365,85123A,WHITE HANGING HEART T-LIGHT HOLDER,6,2010-12-01 08:26:00,2.55,17850.0,United Kingdom",
        "536365,71053,WHITE METAL LANTERN,6,2010-12-01 08:26:00,3.39,17850.0,United Kingdom",
        "C536379,D,Discount,-1,2010-12-01 09:41:00,27.5,14527.0,United Kingdom",
        "536414,22139,,56,2011-06-01 11:52:00,0.0,,United Kingdom",
        "536415,22140,Manual,1,2011-06-01 11:53:00,0.0,12748.0,United Kingdom",
        "536589,21777,,-10,2010-12-01 16:50:00,0.0,,United Kingdom",
        "A563185,B,Adjust bad debt,1,2011-08-12 14:50:00,11062.06,,United Kingdom",
    ])  # fmt: skip
    summary = import_file(ingest, site=SITE, path=path, preset="online-retail")
    assert (summary.rows_read, summary.stored) == (6, 3)
    # rowsRead counts what the preset makes of the lines (invoices); linesRead the file's lines.
    assert (summary.as_dict()["rowsRead"], summary.as_dict()["linesRead"]) == (6, 7)
    assert (summary.as_dict()["sales"], summary.as_dict()["refunds"]) == (2, 1)
    # Zero value for no customer is stock counted back in; for a customer, a gift: an order of 0.
    assert summary.rejected == {"STOCK_ADJUSTMENT": 2, "NOT_AN_ORDER": 1}
    again = import_file(ingest, site=SITE, path=path, preset="online-retail").as_dict()
    assert (again["stored"], again["sales"], again["refunds"], again["duplicates"]) == (0, 0, 0, 3)
    rows = lake_rows(
        ingest, "orders",
        "SELECT order_id, is_refund, total, currency, visitor_id, user_id, item_count, ts::VARCHAR FROM t ORDER BY 1",
    )  # fmt: skip
    assert rows == [
        (
            "536365",
            False,
            Decimal("35.640000"),
            "GBP",
            "customer-17850",
            "17850",
            12,
            "2010-12-01 08:26:00+00",
        ),
        # London summer time: 11:53 local is 10:53 UTC.
        ("536415", False, Decimal("0.000000"), "GBP", "customer-12748", "12748", 1, "2011-06-01 10:53:00+00"),
        (
            "C536379",
            True,
            Decimal("-27.500000"),
            "GBP",
            "customer-14527",
            "14527",
            1,
            "2010-12-01 09:41:00+00",
        ),
    ]


def test_online_retail_rejects_a_bad_invoice_and_keeps_the_others(ingest, tmp_path):
    path = retail_file(tmp_path, [
        "536365,85123A,HEART,6,2010-12-01 08:26:00,2.55,17850.0,United Kingdom",
        "536366,22633,HAND WARMER,6,notadate,1.85,17850.0,United Kingdom",
        "536367,84879,BIRD,32,2010-12-01 08:34:00,1E+1000000,13047.0,United Kingdom",
        "536368,22960,JAM,6,2010-12-01 08:34:00,١٢,13047.0,United Kingdom",
        "536369,21756,BATH,3,12/1/2010 8:35,5.95,13047.0,United Kingdom",  # the UCI export's own style
    ])  # fmt: skip
    summary = import_file(ingest, site=SITE, path=path, preset="online-retail").as_dict()
    assert (summary["rowsRead"], summary["stored"]) == (5, 2)
    assert summary["rejected"] == {"TIMESTAMP_INVALID": 1, "INVALID_ORDER": 2}
    assert summary["examples"]["TIMESTAMP_INVALID"] == [
        "line 3: invoice 536366 has InvoiceDate 'notadate', not a time such as 2010-12-01 08:26:00 or 12/1/2010 8:26"
    ]
    rows = lake_rows(ingest, "orders", "SELECT order_id, total, ts::VARCHAR FROM t ORDER BY 1")
    assert rows == [
        ("536365", Decimal("15.300000"), "2010-12-01 08:26:00+00"),
        ("536369", Decimal("17.850000"), "2010-12-01 08:35:00+00"),
    ]


def test_online_retail_names_the_columns_a_file_lacks(ingest, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("name,eventId,visitorId,sessionId\npage_view,e1,v1,s1\n")
    with pytest.raises(ValueError, match="needs the columns InvoiceNo, StockCode, Quantity, UnitPrice, "
                                         "InvoiceDate; line 2 has no InvoiceNo, StockCode"):  # fmt: skip
        import_file(ingest, site=SITE, path=path, preset="online-retail")
    ingest.flush()
    assert ingest.lake.files(ingest.flushers["orders"].table) == []  # nothing stored


def reference_retail(lines: list[dict]) -> dict[str, tuple[bool, Decimal]]:
    """A plain reading of the rules: invoice -> (refund?, total) for the invoices that are orders."""
    invoices: dict[str, list[dict]] = {}
    for line in lines:
        invoices.setdefault(line["InvoiceNo"], []).append(line)
    return {
        invoice: (invoice.startswith("C"), sum(int(r["Quantity"]) * Decimal(r["UnitPrice"]) for r in rows))
        for invoice, rows in invoices.items()
        if invoice.startswith("C") or is_retail_sale(invoice, rows)
    }


@pytest.mark.slow
def test_the_cli_imports_a_slice_of_the_real_online_retail_file(tmp_path):
    path = RETAIL_HEAD
    lines = list(csv.DictReader(io.StringIO(path.read_text())))
    expected = reference_retail(lines)

    data_dir = tmp_path / "data"
    aisle = str(Path(sys.executable).parent / "aisle")
    demo = json.loads(subprocess.run([aisle, "demo", "--data-dir", str(data_dir)], capture_output=True,
                                     text=True, check=True).stdout)  # fmt: skip
    result = subprocess.run(
        [aisle, "import", "--site", demo["siteId"], "--preset", "online-retail", str(path), "--data-dir", str(data_dir)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["stored"] == len(expected)
    glob = str(data_dir / "lake" / "orders" / "*" / "*" / "*.parquet")
    stored = duckdb.sql(
        f"SELECT order_id, is_refund, total FROM read_parquet('{glob}', hive_partitioning = true) "
        f"WHERE site_id = '{demo['siteId']}'"
    ).fetchall()
    assert {order: (refund, total) for order, refund, total in stored} == expected


def test_a_second_writer_on_the_same_data_dir_is_refused(ingest, tmp_path):
    with pytest.raises(DataDirBusy, match="another Aisle process writes"):
        Ingest(data_dir=tmp_path / "data")
