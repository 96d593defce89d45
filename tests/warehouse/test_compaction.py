"""Compaction merges a partition's small files atomically, while queries and flushes go on."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.service import Ingest
from ingest.validation import Context
from warehouse import compaction
from warehouse.compaction import compact_table, purge_retired
from warehouse.engine import Engine
from warehouse.lake import EVENTS, ORDERS

SITE = "11111111-1111-1111-1111-111111111111"


def context() -> Context:
    return Context(
        site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="server", historical=True
    )


def events(start: int, count: int) -> list[dict]:
    return [
        {"name": "page_view", "eventId": f"e{i}", "visitorId": f"v{i % 7}", "sessionId": "s",
         "timestamp": "2024-03-05T10:00:00Z"}
        for i in range(start, start + count)
    ]  # fmt: skip


@pytest.fixture
def ingest(tmp_path):
    service = Ingest(data_dir=tmp_path / "data", flush_interval_seconds=3600)
    yield service
    service.stop()


def flush_in_files(ingest: Ingest, *, files: int, per_file: int) -> int:
    for number in range(files):
        ingest.accept_events_sync(events(number * per_file, per_file), context())
        ingest.flush()
    return files * per_file


def test_compaction_merges_small_files_into_one_and_keeps_every_row(ingest):
    total = flush_in_files(ingest, files=12, per_file=25)
    partition = ingest.lake.partition_dir(EVENTS, site_id=SITE, date="2024-03-05")
    assert len(list(partition.glob("*.parquet"))) == 12

    result = compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)

    assert (result.partitions, result.files_in, result.files_out, result.rows) == (1, 12, 1, 300)
    [merged] = list(partition.glob("*.parquet"))
    assert merged.name.startswith("compact-")
    ids = duckdb.sql(f"SELECT event_id FROM read_parquet('{merged}')").fetchall()
    assert sorted(i for (i,) in ids) == sorted(f"e{i}" for i in range(total))


@pytest.mark.parametrize("site_id", [None, SITE])  # the engine's listing; one site's, as ad-hoc SQL's
def test_files_listed_while_a_compaction_swaps_the_partition_all_exist(ingest, monkeypatch, site_id):
    """The engine lists a query's files while compaction may swap partitions (found by a black-box
    run: a query named a file of the old version inside the new one)."""
    flush_in_files(ingest, files=3, per_file=10)
    real_resolve = Path.resolve
    swapped = []

    def resolve_after_a_swap(self, *args, **kwargs):
        if not swapped:  # the swap lands between the listing and the first resolve
            swapped.append(True)
            compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
        return real_resolve(self, *args, **kwargs)

    monkeypatch.setattr(Path, "resolve", resolve_after_a_swap)
    files = ingest.lake.live_files(EVENTS, site_id=site_id)
    monkeypatch.undo()
    assert swapped and files and all(f.exists() for f in files)
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet({[str(f) for f in files]})").fetchall() == [(30,)]


def test_a_partition_with_one_file_is_left_alone(ingest):
    flush_in_files(ingest, files=1, per_file=10)
    result = compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
    assert result.partitions == 0


def test_queries_during_compaction_never_lose_or_duplicate_a_row(ingest):
    flush_in_files(ingest, files=40, per_file=50)
    engine = Engine(ingest.lake)
    seen: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def query() -> None:
        cursor = engine.cursor()
        while not stop.is_set():
            try:
                seen.append(
                    cursor.execute("SELECT count(*), count(DISTINCT event_id) FROM events").fetchone()
                )
            except BaseException as exc:  # any failure is the finding
                errors.append(exc)
                return

    def keep_flushing() -> None:
        for number in range(40, 60):
            ingest.accept_events_sync(events(number * 50, 50), context())
            ingest.flush()

    readers = [threading.Thread(target=query) for _ in range(2)]
    writer = threading.Thread(target=keep_flushing)
    for thread in (*readers, writer):
        thread.start()
    for _ in range(3):
        compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
    writer.join()
    compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
    stop.set()
    for thread in readers:
        thread.join()

    assert not errors
    assert len(seen) > 10
    assert all(count == distinct for count, distinct in seen), "a query saw a row twice"
    assert all(2000 <= count <= 3000 for count, _ in seen), "a query lost rows"
    final = engine.cursor().execute("SELECT count(*), count(DISTINCT event_id) FROM events").fetchone()
    assert final == (3000, 3000)
    engine.close()


def test_retired_versions_are_purged_only_after_their_grace_period(ingest):
    flush_in_files(ingest, files=3, per_file=5)
    compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
    versions = ingest.lake.versions_dir(EVENTS)
    assert len(list(versions.glob("*/*/*"))) == 2
    assert purge_retired(ingest.lake, EVENTS, grace_seconds=3600) == 0
    assert purge_retired(ingest.lake, EVENTS, grace_seconds=0) == 1
    [live] = list(versions.glob("*/*/*"))
    assert live == ingest.lake.partition_dir(EVENTS, site_id=SITE, date="2024-03-05").resolve()


def test_partitions_compact_side_by_side_and_each_keeps_its_own_rows(ingest):
    for day in (5, 6, 7):
        for number in range(3):
            batch = [{**e, "eventId": f"d{day}-{e['eventId']}", "timestamp": f"2024-03-0{day}T10:00:00Z"}
                     for e in events(number * 10, 10)]  # fmt: skip
            ingest.accept_events_sync(batch, context())
            ingest.flush()

    result = compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock, workers=3)

    assert (result.partitions, result.files_in, result.files_out, result.rows) == (3, 9, 3, 90)
    for day in (5, 6, 7):
        partition = ingest.lake.partition_dir(EVENTS, site_id=SITE, date=f"2024-03-0{day}")
        [merged] = list(partition.glob("*.parquet"))
        ids = duckdb.sql(f"SELECT event_id FROM read_parquet('{merged}')").fetchall()
        assert sorted(i for (i,) in ids) == sorted(f"d{day}-e{i}" for i in range(30))


def test_merged_files_have_big_row_groups_not_one_per_small_file(ingest):
    flush_in_files(ingest, files=12, per_file=25)
    compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)
    [merged] = ingest.lake.files(EVENTS)
    metadata = pq.ParquetFile(merged).metadata
    assert (metadata.num_row_groups, metadata.num_rows) == (1, 300)
    columns = {metadata.row_group(0).column(i).path_in_schema: metadata.row_group(0).column(i)
               for i in range(metadata.num_columns)}  # fmt: skip
    # Event ids are all distinct: stored plain, not through a dictionary; names share one; event
    # times, nearly all distinct too, as deltas.
    assert "RLE_DICTIONARY" not in columns["event_id"].encodings
    assert "RLE_DICTIONARY" in columns["name"].encodings
    assert "DELTA_BINARY_PACKED" in columns["ts"].encodings
    assert "RLE_DICTIONARY" not in columns["ts"].encodings


def test_merged_events_come_in_name_order_each_visitor_together_so_a_name_filter_reads_only_its_groups(
    ingest, monkeypatch
):
    monkeypatch.setattr(compaction, "ROW_GROUP_ROWS", 10)
    names = ["page_view", "add_to_cart", "page_view", "purchase", "product_view"]
    for number in range(6):
        batch = events(number * 10, 10)
        for i, event in enumerate(batch):
            event["name"] = names[(number + i) % len(names)]
            if event["name"] in ("add_to_cart", "purchase", "product_view"):
                event["metadata"] = {"productItemCode": "SKU-1"}
        ingest.accept_events_sync(batch, context())
        ingest.flush()
    files = [str(f) for f in ingest.lake.files(EVENTS)]
    before = duckdb.sql(f"SELECT name, visitor_id, event_id FROM read_parquet({files})").fetchall()

    compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)

    [merged] = ingest.lake.files(EVENTS)
    rows = pq.read_table(merged, columns=["name", "visitor_id", "event_id"]).to_pylist()
    in_file_order = [(r["name"], r["visitor_id"], r["event_id"]) for r in rows]
    assert sorted(in_file_order) == sorted(before)
    assert [r[0] for r in in_file_order] == sorted(r[0] for r in before)
    # Within a name, a visitor's rows are one run: the (name, visitor) pairs change exactly as
    # often as there are distinct pairs.
    runs = [
        pair
        for i, pair in enumerate(r[:2] for r in in_file_order)
        if i == 0 or in_file_order[i - 1][:2] != pair
    ]
    assert len(runs) == len({r[:2] for r in before})
    metadata = pq.ParquetFile(merged).metadata
    assert metadata.num_row_groups == 6
    name_column = metadata.schema.names.index("name")
    ranges = [metadata.row_group(g).column(name_column).statistics for g in range(6)]
    held = [{r[0] for r in in_file_order[g * 10 : (g + 1) * 10]} for g in range(6)]
    for name in set(names):
        # The groups a filter on this name cannot skip on their statistics are exactly those holding it.
        assert {g for g in range(6) if ranges[g].min <= name <= ranges[g].max} == {
            g for g in range(6) if name in held[g]
        }


def test_a_big_partition_merges_in_runs_of_bounded_input_one_file_each(ingest):
    total = flush_in_files(ingest, files=12, per_file=25)
    partition = ingest.lake.partition_dir(EVENTS, site_id=SITE, date="2024-03-05")
    sizes = sorted(p.stat().st_size for p in partition.glob("*.parquet"))
    # Input runs are capped at twice the target size: here, four small files a run.
    target = (4 * sizes[-1]) // 2

    result = compact_table(
        ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock, target_bytes=target
    )

    assert (result.files_in, result.files_out, result.rows) == (12, 3, total)
    merged = sorted(partition.glob("*.parquet"))
    assert len(merged) == 3 and all(p.name.startswith("compact-") for p in merged)
    ids = duckdb.sql(f"SELECT event_id FROM read_parquet({[str(p) for p in merged]})").fetchall()
    assert sorted(i for (i,) in ids) == sorted(f"e{i}" for i in range(total))


def test_runs_are_cut_by_the_memory_their_rows_decode_to_not_only_by_their_files_bytes(ingest, monkeypatch):
    total = flush_in_files(ingest, files=12, per_file=25)
    partition = ingest.lake.partition_dir(EVENTS, site_id=SITE, date="2024-03-05")
    biggest = max(p.stat().st_size for p in partition.glob("*.parquet"))
    decoded = pl.read_parquet(
        max(partition.glob("*.parquet"), key=lambda p: p.stat().st_size)
    ).estimated_size()
    # Room in memory for four files' rows a run, though the bytes on disk would allow all twelve.
    monkeypatch.setattr(compaction, "RUN_MEMORY_BYTES", int(decoded * 4.5))

    result = compact_table(
        ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock, target_bytes=12 * biggest
    )

    assert (result.files_in, result.files_out, result.rows) == (12, 3, total)
    merged = sorted(partition.glob("*.parquet"))
    ids = duckdb.sql(f"SELECT event_id FROM read_parquet({[str(p) for p in merged]})").fetchall()
    assert sorted(i for (i,) in ids) == sorted(f"e{i}" for i in range(total))


def test_merged_files_keep_every_column_with_its_type_and_the_one_value_a_column_holds(ingest):
    batch = events(0, 10)
    batch[3]["userId"] = "ada"
    ingest.accept_events_sync(batch, context())
    ingest.flush()
    ingest.accept_events_sync(events(10, 10), context())
    ingest.flush()
    [small, _] = ingest.lake.files(EVENTS)
    before = duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{small}')").fetchall()

    compact_table(ingest.lake, EVENTS, writer_lock=ingest.flushers["events"].lock)

    [merged] = ingest.lake.files(EVENTS)
    assert duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{merged}')").fetchall() == before
    assert pq.read_schema(merged) == EVENTS.schema  # polars' string views stay out of the file
    assert duckdb.sql(
        f"SELECT event_id, user_id FROM read_parquet('{merged}') WHERE user_id IS NOT NULL"
    ).fetchall() == [("e3", "ada")]
    assert duckdb.sql(f"SELECT count(*), count(referrer) FROM read_parquet('{merged}')").fetchall() == [
        (20, 0)
    ]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["purchase", "page_view", "add_to_cart", None]),
            st.sampled_from(["a", "b", "c", None]),
        ),
        max_size=60,
    )
)
def test_the_cluster_key_orders_names_and_keeps_each_visitors_rows_together_in_arrival_order(rows):
    frame = pl.DataFrame(
        {"name": [r[0] for r in rows], "visitor_id": [r[1] for r in rows], "arrival": list(range(len(rows)))},
        schema={"name": pl.String, "visitor_id": pl.String, "arrival": pl.Int64},
    )
    ordered = frame.sort(compaction._cluster_key(frame, ("name", "visitor_id")), maintain_order=True).rows()

    # The reference: nulls first, then names in order; a name's visitors each in one run.
    assert [r[0] for r in ordered] == sorted((r[0] for r in rows), key=lambda n: (n is not None, n or ""))
    runs = [r[:2] for i, r in enumerate(ordered) if i == 0 or ordered[i - 1][:2] != r[:2]]
    assert len(runs) == len(set(runs))
    for pair in set(runs):
        assert [r[2] for r in ordered if r[:2] == pair] == [i for i, r in enumerate(rows) if r == pair]


def test_merged_orders_keep_their_schema_and_exact_line_items(ingest):
    for number in (1, 2):
        ingest.accept_orders_sync(
            [{"orderId": f"o{number}", "visitorId": "v", "sessionId": "s", "timestamp": "2024-03-05T10:00:00Z",
              "currency": "EUR", "total": "10.50",
              "items": [{"productItemCode": f"P-{number}", "quantity": number, "price": "5.25", "name": "Mug"}]}],
            context(),
        )  # fmt: skip
        ingest.flush()

    compact_table(ingest.lake, ORDERS, writer_lock=ingest.flushers["orders"].lock)

    [merged] = ingest.lake.files(ORDERS)
    assert pq.read_schema(merged) == ORDERS.schema
    assert pq.ParquetFile(merged).metadata.num_row_groups == 1  # not one per small file
    rows = sorted(pq.read_table(merged, columns=["order_id", "total", "items"]).to_pylist(), key=str)
    assert rows == [
        {"order_id": f"o{n}", "total": Decimal("10.500000"),
         "items": [{"product_item_code": f"P-{n}", "product_id": None, "quantity": n, "price": Decimal("5.250000"),
                    "name": "Mug", "category_path": None}]}
        for n in (1, 2)
    ]  # fmt: skip
