"""`aisle sql`, run for real as a subprocess over a data directory with one site's events and orders."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ingest.service import Ingest
from ingest.validation import Context
from tests.test_cli import run_aisle
from warehouse.config_store import organizations, sites
from warehouse.config_store.store import create_store_engine, migrate

# Runs the `aisle` console script as subprocesses (seconds each).
pytestmark = pytest.mark.slow


@pytest.fixture
def data_dir(tmp_path: Path) -> tuple[Path, str]:
    """A data dir with one site: ann views two pages and buys (EUR 12.50), bob views one page."""
    data = tmp_path / "data"
    data.mkdir()
    store = create_store_engine(f"sqlite:///{data / 'aisle.db'}")
    migrate(store)
    with store.begin() as conn:
        org = organizations.create(conn, name="Acme")
        site = sites.create(conn, organization_id=org["id"], name="Shop", domain="shop.example.com",
                            currency="EUR", timezone="UTC", tracking_config={})  # fmt: skip
    store.dispose()
    ingest = Ingest(data_dir=data, flush_interval_seconds=3600)
    ctx = Context(site_id=site["id"], site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    events = [{"name": "page_view", "visitorId": v, "sessionId": f"s-{v}", "timestamp": f"2024-03-01T1{i}:00:00Z"}
              for i, v in enumerate(["ann", "ann", "bob"])]  # fmt: skip
    assert ingest.accept_events_sync(events, ctx).rejected == []
    order = {"orderId": "o-1", "visitorId": "ann", "sessionId": "s-ann", "timestamp": "2024-03-01T12:00:00Z",
             "currency": "EUR", "total": "12.50", "items": [{"productItemCode": "P1", "quantity": 1, "price": "12.50"}]}  # fmt: skip
    assert ingest.accept_orders_sync([order], ctx).rejected == []
    ingest.flush()
    ingest.stop()
    return data, site["id"]


def test_prints_a_table(data_dir):
    data, site_id = data_dir
    result = run_aisle("sql", "--site", site_id, "--data-dir", str(data),
                       "SELECT visitor_id, count(*) AS events FROM events GROUP BY 1 ORDER BY 1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        " visitor_id | events",
        "------------+--------",
        " ann        | 2     ",
        " bob        | 1     ",
        "(2 rows)",
    ]


def test_dialect_parameters_limit_and_formats(data_dir, tmp_path):
    data, site_id = data_dir
    common = ("--site", site_id, "--data-dir", str(data))
    result = run_aisle("sql", *common, "--dialect", "postgres", "--param", "who=ann", "--format", "json",
                       "SELECT (SELECT count(*) FROM events WHERE visitor_id = :who) AS n, (SELECT SUM(total) FROM orders) AS revenue")  # fmt: skip
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["rows"], body["truncated"]) == ([[2, "12.500000"]], False)
    assert result.stdout.endswith("}\n")
    result = run_aisle(
        "sql", *common, "--format", "csv", "--limit", "1", "SELECT name, ts FROM events ORDER BY ts"
    )
    assert list(csv.reader(io.StringIO(result.stdout))) == [
        ["name", "ts"],
        ["page_view", "2024-03-01 10:00:00.000000Z"],
    ]
    result = run_aisle("sql", *common, "--limit", "2", "SELECT visitor_id FROM events ORDER BY ts")
    assert result.stdout.splitlines()[-1] == "(2 rows, truncated: more rows exist; raise --limit)"
    target = tmp_path / "orders.parquet"
    result = run_aisle(
        "sql", *common, "--format", "parquet", "--output", str(target), "SELECT * FROM order_items"
    )
    assert result.returncode == 0, result.stderr
    assert pq.read_table(target).column("product_item_code").to_pylist() == ["P1"]


def test_json_gives_integers_javascript_cannot_hold_exactly_as_strings(data_dir):
    data, site_id = data_dir
    result = run_aisle("sql", "--site", site_id, "--data-dir", str(data), "--format", "json",
                       "SELECT 9007199254740993::BIGINT AS id, count(*) AS events FROM events")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rows"] == [["9007199254740993", 3]]


def test_refusals_and_errors_exit_2_with_the_code(data_dir):
    data, site_id = data_dir
    common = ("--site", site_id, "--data-dir", str(data))
    result = run_aisle("sql", *common, "SELECT * FROM read_csv('/etc/passwd')")
    assert result.returncode == 2
    assert result.stderr.startswith("error: SQL_TABLE_FUNCTION_NOT_ALLOWED: Table function 'read_csv'")
    assert "line 1, column 15" in result.stderr
    result = run_aisle("sql", *common, "SELECT nope FROM events")
    assert (result.returncode, result.stderr.split(":")[1].strip()) == (2, "SQL_INVALID")
    result = run_aisle(
        "sql", "--site", "11111111-1111-1111-1111-111111111111", "--data-dir", str(data), "SELECT 1"
    )
    # As POST /analytics/sql answers it, and with the status of the command's other SQL errors.
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "error: SITE_ACCESS_DENIED: You do not have access to this site",
    )
    result = run_aisle("sql", "--site", "my-shop", "--data-dir", str(data), "SELECT 1")
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "error: INVALID_SITE_ID: Site id 'my-shop' is not a UUID",
    )
    shouted = run_aisle(
        "sql", "--site", site_id.upper(), "--data-dir", str(data), "SELECT count(*) FROM events"
    )
    assert shouted.returncode == 0, shouted.stderr
