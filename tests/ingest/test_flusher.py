"""The flusher: the durable log reaches the lake exactly once, in typed, Hive-partitioned Parquet."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import orjson
import pyarrow.parquet as pq
import pytest

from ingest.dedupe import key_hash
from ingest.events import event_log_columns
from ingest.log import DurableLog, LogClosed
from ingest.service import Ingest, encode
from ingest.validation import Context, common_columns
from tests.ingest.event_rows import event_row
from warehouse.lake import EVENTS, EVENTS_SCHEMA, METRICS, METRICS_SCHEMA, ORDERS, ORDERS_SCHEMA, LakeTable

SITE_A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
SITE_B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def open_ingest(opened: list[Ingest], data_dir: Path, *, start: bool = True) -> Ingest:
    service = Ingest(data_dir=data_dir, flush_interval_seconds=3600)  # flushes only when told
    opened.append(service)
    if start:
        service.start()
    return service


def ctx(site_id: str = SITE_A, **fields) -> Context:
    base = {
        "site_id": site_id,
        "site_currency": "EUR",
        "received_at": datetime.now(UTC),
        "channel": "server",
        "historical": True,
    }
    return Context(**{**base, **fields})


def event(event_id: str, **fields) -> dict:
    return {
        "name": "page_view",
        "eventId": event_id,
        "visitorId": "v-1",
        "sessionId": "s-1",
        "timestamp": "2011-03-04T05:06:07Z",
        **fields,
    }


def lake_sql(service: Ingest, table: LakeTable, sql: str) -> list[tuple]:
    source = f"read_parquet('{service.lake.glob(table)}', hive_partitioning = true)"
    return duckdb.sql(sql.format(t=source)).fetchall()


def count(service: Ingest, table: LakeTable = EVENTS) -> int:
    if not service.lake.files(table):
        return 0
    return lake_sql(service, table, "SELECT count(*) FROM {t}")[0][0]


def test_accepted_events_reach_the_lake_once_and_reflushing_is_a_no_op(data_dir, opened):
    service = open_ingest(opened, data_dir)
    result = service.accept_events_sync([event("e1"), event("e2"), event("e3", name="teleport")], ctx())
    assert (result.accepted, result.duplicates, [r.index for r in result.rejected]) == (2, 0, [2])
    assert count(service) == 0  # accepted means durable in the log, not yet in the lake
    assert service.flush() == 2
    assert count(service) == 2
    files = service.lake.files(EVENTS)
    assert len(files) == 1
    assert service.flush() == 0
    assert service.flush() == 0
    assert count(service) == 2
    assert service.lake.files(EVENTS) == files
    assert lake_sql(service, EVENTS, "SELECT event_id, site_id, date FROM {t} ORDER BY event_id") == [
        ("e1", SITE_A, datetime(2011, 3, 4).date()),
        ("e2", SITE_A, datetime(2011, 3, 4).date()),
    ]


def test_a_crash_between_parquet_and_checkpoint_stores_nothing_twice(data_dir, opened, monkeypatch):
    first = open_ingest(opened, data_dir, start=False)
    first.accept_events_sync([event(f"e{i}") for i in range(5)], ctx())
    real_save = DurableLog.save_checkpoint
    calls = []

    def crash_once(self, position):
        calls.append(position)
        if len(calls) == 1:
            raise OSError("power cut")
        return real_save(self, position)

    monkeypatch.setattr(DurableLog, "save_checkpoint", crash_once)
    with pytest.raises(OSError, match="power cut"):
        first.flush()
    assert count(first) == 5  # the Parquet file is there ...
    assert first.logs["events"].checkpoint().offset == 0  # ... but the checkpoint never moved
    first_end = first.logs["events"].checkpoint()
    first.stop()  # the process is gone: nothing flushed since
    opened.remove(first)

    second = open_ingest(opened, data_dir)  # start() replays the log beyond the checkpoint
    # The replay read all five rows again (the checkpoint moved past them) and wrote none of them.
    assert second.logs["events"].checkpoint() == second.logs["events"].durable_end != first_end
    assert second.flushers["events"].rows_written == 0
    assert count(second) == 5
    assert sorted(r[0] for r in lake_sql(second, EVENTS, "SELECT event_id FROM {t}")) == [
        f"e{i}" for i in range(5)
    ]
    assert second.flush() == 0
    assert count(second) == 5


def test_the_same_event_id_is_stored_once_before_and_after_a_flush(data_dir, opened):
    service = open_ingest(opened, data_dir)
    first = service.accept_events_sync([event("e1"), event("e1")], ctx())
    assert (first.accepted, first.duplicates) == (2, 1)
    again = service.accept_events_sync([event("e2")], ctx())
    resent_before_flush = service.accept_events_sync([event("e2")], ctx())
    # Not yet in the lake, but its id was claimed when it was accepted: already a duplicate.
    assert (again.accepted, resent_before_flush.accepted, resent_before_flush.duplicates) == (1, 1, 1)
    assert service.logs["events"].durable_end.offset > 0
    assert service.flush() == 2
    resent_after_flush = service.accept_events_sync([event("e1"), event("e3")], ctx())
    assert (resent_after_flush.accepted, resent_after_flush.duplicates) == (2, 1)
    assert service.flush() == 1
    assert sorted(r[0] for r in lake_sql(service, EVENTS, "SELECT event_id FROM {t}")) == ["e1", "e2", "e3"]
    # The same id on another site is another event.
    assert service.accept_events_sync([event("e1")], ctx(SITE_B)).duplicates == 0
    assert service.flush() == 1
    assert count(service) == 4


def test_stored_ids_are_remembered_across_a_restart(data_dir, opened):
    first = open_ingest(opened, data_dir)
    first.accept_events_sync([event("e1")], ctx())
    first.flush()
    first.stop()
    opened.remove(first)
    second = open_ingest(opened, data_dir)
    result = second.accept_events_sync([event("e1"), event("e2")], ctx())
    assert (result.accepted, result.duplicates) == (2, 1)
    assert second.flush() == 1
    assert count(second) == 2


def test_partitions_by_site_and_utc_date(data_dir, opened):
    service = open_ingest(opened, data_dir)
    service.accept_events_sync(
        [
            event("a1", timestamp="2011-03-04T23:59:59Z"),
            event("a2", timestamp="2011-03-05T01:30:00+02:00"),  # 23:30 UTC on the 4th
            event("a3", timestamp="2011-03-04T23:30:00-01:00"),  # 00:30 UTC on the 5th
        ],
        ctx(SITE_A),
    )
    service.accept_events_sync([event("b1", timestamp="2011-03-04T12:00:00Z")], ctx(SITE_B))
    assert service.flush() == 4
    root = data_dir / "lake" / "events"
    partitions = sorted(str(p.relative_to(root)) for p in root.glob("*/*"))
    assert partitions == [
        f"site_id={SITE_A}/date=2011-03-04",
        f"site_id={SITE_A}/date=2011-03-05",
        f"site_id={SITE_B}/date=2011-03-04",
    ]
    by_partition = {
        str(p.parent.relative_to(root)): sorted(pq.read_table(p)["event_id"].to_pylist())
        for p in service.lake.files(EVENTS)
    }
    assert by_partition == {
        f"site_id={SITE_A}/date=2011-03-04": ["a1", "a2"],
        f"site_id={SITE_A}/date=2011-03-05": ["a3"],
        f"site_id={SITE_B}/date=2011-03-04": ["b1"],
    }


def test_a_flush_over_many_dates_writes_the_newest_first_and_tells_readers_at_once(data_dir, opened):
    service = open_ingest(opened, data_dir)
    lake = service.lake
    # A backfill's old dates and a live event, flushed together.
    events = [event(f"old{day}", timestamp=f"2011-03-{day:02d}T12:00:00Z") for day in range(1, 6)]
    service.accept_events_sync([*events, event("live", timestamp="2011-04-01T12:00:00Z")], ctx(SITE_A))
    seen: list[tuple[str, bool]] = []
    announce = lake.announce_change
    lake.announce_change = lambda: (seen.append(("announce", False)), announce())[1]
    write_file = lake.write_file

    def recording_write_file(table, data, **kwargs):
        seen.append((kwargs["date"], kwargs["announce"]))
        return write_file(table, data, **kwargs)

    lake.write_file = recording_write_file
    assert service.flush() == 6
    assert seen == [
        ("2011-04-01", False), ("announce", False),
        ("2011-03-05", False), ("2011-03-04", False), ("2011-03-03", False), ("2011-03-02", False),
        ("2011-03-01", False), ("announce", False),
    ]  # fmt: skip
    stored = pq.read_table([str(f) for f in lake.files(EVENTS)])["event_id"].to_pylist()
    assert sorted(stored) == ["live", "old1", "old2", "old3", "old4", "old5"]


def test_written_files_have_the_lake_schemas_and_exact_values(data_dir, opened):
    service = open_ingest(opened, data_dir)
    service.accept_events_sync(
        [event("e1", value="19.99", currency="gbp", timestamp="2011-03-04T05:06:07.123456Z")], ctx()
    )
    service.accept_orders_sync(
        [
            {
                "orderId": "o1",
                "visitorId": "v-1",
                "sessionId": "s-1",
                "timestamp": "2011-03-04T06:00:00Z",
                "total": "99999999999999999.999999",
                "tax": 0.1,
                "items": [{"productItemCode": "P-1", "quantity": 2, "price": "0.000001"}],
            }
        ],
        ctx(),
    )
    assert service.flush() == 2
    [events_file] = service.lake.files(EVENTS)
    [orders_file] = service.lake.files(ORDERS)
    assert pq.read_schema(events_file).equals(EVENTS_SCHEMA)
    assert pq.read_schema(orders_file).equals(ORDERS_SCHEMA)
    # Event times, nearly all distinct in real traffic, are stored as deltas, not through a dictionary.
    ts = pq.ParquetFile(events_file).metadata.row_group(0).column(EVENTS_SCHEMA.get_field_index("ts"))
    assert "DELTA_BINARY_PACKED" in ts.encodings and "RLE_DICTIONARY" not in ts.encodings
    assert str(EVENTS_SCHEMA.field("value").type) == "decimal128(24, 6)"
    assert str(EVENTS_SCHEMA.field("ts").type) == "timestamp[us, tz=UTC]"
    row = pq.read_table(events_file).to_pylist()[0]
    assert row["value"] == Decimal("19.990000")
    assert row["currency"] == "GBP"
    assert row["ts"] == datetime(2011, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
    assert "site_id" not in row and "date" not in row  # those live in the path
    order = pq.read_table(orders_file).to_pylist()[0]
    assert order["total"] == Decimal("99999999999999999.999999")
    assert order["tax"] == Decimal("0.100000")
    assert order["subtotal"] is None
    assert order["items"] == [
        {
            "product_item_code": "P-1",
            "product_id": None,
            "quantity": 2,
            "price": Decimal("0.000001"),
            "name": None,
            "category_path": None,
        }
    ]


def test_metrics_flush_with_their_schema(data_dir, opened):
    service = open_ingest(opened, data_dir)
    metrics = [{"name": "LCP", "value": 2.5, "unit": "s"}, {"name": "CLS"}]
    result = asyncio.run(service.accept_metrics(metrics, ctx(channel="web")))
    assert (result.accepted, [r.code for r in result.rejected]) == (1, ["INVALID_METRIC"])
    assert service.flush() == 1
    [metrics_file] = service.lake.files(METRICS)
    assert pq.read_schema(metrics_file).equals(METRICS_SCHEMA)
    assert lake_sql(service, METRICS, "SELECT name, value, unit, channel FROM {t}") == [
        ("LCP", 2.5, "s", "web")
    ]


def test_a_batch_is_one_log_line_with_its_shared_columns_once(data_dir, opened):
    service = open_ingest(opened, data_dir)
    service.accept_events_sync(
        [event("e1", url="https://shop.example.com/a"), event("e2", url="https://shop.example.com/b")],
        ctx(client_platform="ios"),
    )
    lines = (data_dir / "log" / "events").glob("*.log")
    [line] = b"".join(path.read_bytes() for path in lines).splitlines()
    record = orjson.loads(line)
    assert record["h"] == {
        "received_at": record["h"]["received_at"],
        "channel": "server",
        "client_platform": "ios",
        "client_version": None,
        "site_id": SITE_A,
    }
    # Columns with one value in the batch are logged once; the others (and the ids) as lists.
    assert record["c"] == {
        "event_id": ["e1", "e2"],
        "url": ["https://shop.example.com/a", "https://shop.example.com/b"],
    }
    assert record["s"]["visitor_id"] == "v-1"
    assert record["s"]["user_id"] is None
    assert record["s"]["date"] == "2011-03-04"
    assert "site_id" not in record["s"]
    assert service.flush() == 2
    assert lake_sql(
        service, EVENTS, "SELECT event_id, site_id, client_platform, visitor_id, url FROM {t} ORDER BY 1"
    ) == [
        ("e1", SITE_A, "ios", "v-1", "https://shop.example.com/a"),
        ("e2", SITE_A, "ios", "v-1", "https://shop.example.com/b"),
    ]


def test_lines_listing_a_column_and_lines_holding_it_once_flush_together(data_dir, opened):
    service = open_ingest(opened, data_dir, start=False)
    service.accept_events_sync([event("one-1"), event("one-2")], ctx())  # visitor v-1 held once
    # A line as the previous version logged it: every column listed.
    columns, _ = event_log_columns([event("listed-1", visitorId="v-9", userId="u-9")], ctx(site_id=SITE_B))
    common = common_columns(ctx(site_id=SITE_B))
    service.logs["events"].append_sync(
        b'{"h":' + orjson.dumps(common) + b',"c":' + orjson.dumps(columns) + b"}\n"
    )
    service.accept_events_sync([event("two-1", visitorId="v-2"), event("two-2", visitorId="v-3")], ctx())
    assert service.flush() == 5
    assert lake_sql(
        service, EVENTS, "SELECT event_id, site_id, visitor_id, user_id, name FROM {t} ORDER BY 1"
    ) == [
        ("listed-1", SITE_B, "v-9", "u-9", "page_view"),
        ("one-1", SITE_A, "v-1", None, "page_view"),
        ("one-2", SITE_A, "v-1", None, "page_view"),
        ("two-1", SITE_A, "v-2", None, "page_view"),
        ("two-2", SITE_A, "v-3", None, "page_view"),
    ]


def test_a_flush_writes_what_the_log_held_when_it_began(data_dir, opened, monkeypatch):
    """Lines appended while a flush runs wait for the next flush: a busy log becomes one file per
    flush, not a chase of small files."""
    service = open_ingest(opened, data_dir)
    service.accept_events_sync([event("before-1"), event("before-2")], ctx())
    events_log = service.logs["events"]
    read = events_log.read

    def read_while_the_storefront_sends(*args, **kwargs):
        answer = read(*args, **kwargs)
        if len(sent) < 3:
            service.accept_events_sync([event(f"during-{len(sent)}")], ctx())
            sent.append(answer)
        return answer

    sent: list = []
    monkeypatch.setattr(events_log, "read", read_while_the_storefront_sends)
    assert service.flush() == 2
    assert len(service.lake.files(EVENTS)) == 1
    monkeypatch.setattr(events_log, "read", read)
    assert service.flush() == len(sent)
    assert count(service) == 2 + len(sent)


def test_single_row_lines_of_an_older_log_still_reach_the_lake(data_dir, opened):
    service = open_ingest(opened, data_dir, start=False)
    older = {**event_row(event("old-1"), ctx()), "site_id": SITE_B}
    service.logs["events"].append_sync(encode([older]))
    service.accept_events_sync([event("new-1")], ctx())
    service.logs["events"].append_sync(encode([{**older, "event_id": "old-2"}]))
    assert service.flush() == 3
    assert lake_sql(service, EVENTS, "SELECT event_id, site_id FROM {t} ORDER BY 1") == [
        ("new-1", SITE_A),
        ("old-1", SITE_B),
        ("old-2", SITE_B),
    ]


def row_object_batch_line(prefix: str) -> bytes:
    """A batch line as earlier versions logged it: the shared columns once, then a list of row
    objects (``r``), for events ``<prefix>1`` and ``<prefix>2`` of site B."""
    common = {
        "received_at": 1,
        "channel": "web",
        "client_platform": None,
        "client_version": None,
        "site_id": SITE_B,
    }
    rows = [
        {k: v for k, v in event_row(event(f"{prefix}{i}"), ctx()).items() if k not in common} for i in (1, 2)
    ]
    return b'{"h":' + orjson.dumps(common) + b',"r":' + orjson.dumps(rows) + b"}\n"


def test_row_object_batch_lines_of_an_older_log_still_reach_the_lake(data_dir, opened):
    service = open_ingest(opened, data_dir, start=False)
    service.logs["events"].append_sync(row_object_batch_line("old-"))
    service.accept_events_sync([event("new-1")], ctx())
    service.logs["events"].append_sync(row_object_batch_line("older-"))
    assert service.flush() == 5
    assert lake_sql(service, EVENTS, "SELECT event_id, site_id, channel FROM {t} ORDER BY 1") == [
        ("new-1", SITE_A, "server"),
        ("old-1", SITE_B, "web"),
        ("old-2", SITE_B, "web"),
        ("older-1", SITE_B, "web"),
        ("older-2", SITE_B, "web"),
    ]


def test_a_log_of_row_object_batch_lines_only_reaches_the_lake(data_dir, opened):
    service = open_ingest(opened, data_dir, start=False)
    service.logs["events"].append_sync(row_object_batch_line("old-"))
    assert service.flush() == 2
    assert lake_sql(service, EVENTS, "SELECT event_id, site_id FROM {t} ORDER BY 1") == [
        ("old-1", SITE_B),
        ("old-2", SITE_B),
    ]


def test_a_failed_append_releases_the_claimed_ids(data_dir, opened):
    service = open_ingest(opened, data_dir)
    service.logs["events"].close()
    with pytest.raises(LogClosed):
        service.accept_events_sync([event("e1")], ctx())
    assert service.flushers["events"].stored.filter_new([key_hash(SITE_A, "e1")]) == [True]


def test_replayed_lines_are_checked_against_the_lake_but_new_ones_are_not_checked_twice(data_dir, opened):
    first = open_ingest(opened, data_dir)
    first.accept_events_sync([event("e1"), event("e2")], ctx())
    assert first.flush() == 2
    first.stop()
    # As after a crash between the Parquet write and the checkpoint: the log replays e1 and e2.
    (data_dir / "log" / "events" / "checkpoint.json").write_text('{"segment": 1, "offset": 0}')
    second = open_ingest(opened, data_dir)
    assert count(second) == 2
    assert second.accept_events_sync([event("e2"), event("e3")], ctx()).duplicates == 1
    assert second.flush() == 1
    assert count(second) == 3


def test_a_checkpoint_that_failed_after_the_write_does_not_store_twice_in_the_same_process(
    data_dir, opened, monkeypatch
):
    service = open_ingest(opened, data_dir, start=False)
    service.accept_events_sync([event("e1"), event("e2")], ctx())
    real_save = DurableLog.save_checkpoint
    failures = iter([OSError("disk full")])

    def fail_once(self, position):
        failure = next(failures, None)
        if failure:
            raise failure
        return real_save(self, position)

    monkeypatch.setattr(DurableLog, "save_checkpoint", fail_once)
    with pytest.raises(OSError, match="disk full"):
        service.flush()
    service.accept_events_sync([event("e3")], ctx())
    assert service.flush() == 1
    assert count(service) == 3
