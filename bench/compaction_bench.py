"""What compaction buys: the same events as thousands of small flush files versus compacted files,
queried by the same funnel; and how fast compaction itself runs.

    .venv/bin/python bench/compaction_bench.py [--events 10000000] [--per-file 5000] [--days 7]
        [--traffic ids|storefront] [--small-files DIR]

``--traffic ids`` (the default) writes events that fill five columns with short ids (event id, name,
time, visitor, session), the funnel's bare needs. ``--traffic storefront`` writes the demo generator's
storefront traffic (``aisle.demo_data``: sessions, journeys, URLs, referrers, product metadata, consent,
identified visitors; ~13 events per visitor a week), validated and normalised by the ingest path and
written as the flusher writes it, in arrival order; generating 10 M such events takes some minutes,
so ``--small-files DIR`` keeps the small files in DIR and later runs start from a copy of them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aisle.demo_data import generate_site_traffic  # noqa: E402
from ingest.events import event_log_columns  # noqa: E402
from ingest.validation import Context, common_columns  # noqa: E402
from queries.funnel import FunnelQuery, funnel  # noqa: E402
from warehouse.compaction import compact_table  # noqa: E402
from warehouse.engine import Engine  # noqa: E402
from warehouse.lake import EVENTS, EVENTS_SCHEMA, Lake  # noqa: E402

SITE = "33333333-3333-3333-3333-333333333333"
STEPS = ["page_view", "product_view", "add_to_cart", "purchase"]
# Each step is rarer than the one before, like a real storefront funnel.
WEIGHTS = np.array([0.55, 0.3, 0.1, 0.05])
FUNNEL_SQL = (ROOT / "bench" / "sql" / "funnel_4_steps.sql").read_text()


def make_file(rng: np.random.Generator, *, start: int, rows: int, day: date, visitors: int) -> pa.Table:
    ids = pa.array(np.arange(start, start + rows))
    visitor = rng.integers(0, visitors, rows)
    seconds = rng.integers(0, 86_400, rows)
    base = np.datetime64(day.isoformat(), "us")
    columns = {
        "event_id": pc.binary_join_element_wise("e", pc.cast(ids, pa.string()), ""),
        "name": pa.array(np.array(STEPS)[rng.choice(4, rows, p=WEIGHTS)]),
        "ts": pa.array(base + seconds.astype("timedelta64[s]")).cast(EVENTS_SCHEMA.field("ts").type),
        "visitor_id": pc.binary_join_element_wise("v", pc.cast(pa.array(visitor), pa.string()), ""),
        "session_id": pc.binary_join_element_wise("s", pc.cast(pa.array(visitor // 3), pa.string()), ""),
    }
    arrays = []
    for field in EVENTS_SCHEMA:
        arrays.append(columns[field.name] if field.name in columns else pa.nulls(rows, field.type))
    return pa.Table.from_arrays(arrays, schema=EVENTS_SCHEMA)


def write_ids_traffic(lake: Lake, *, events: int, per_file: int, days: int, first: date) -> None:
    rng = np.random.default_rng(42)
    for number in range(events // per_file):
        day = first + timedelta(days=number % days)
        table = make_file(rng, start=number * per_file, rows=per_file, day=day, visitors=200_000)
        lake.write_file(EVENTS, table, site_id=SITE, date=day.isoformat())


def _storefront_batches(*, events: int, days: int, first: date, batch: int = 50_000) -> Iterator[pa.Table]:
    """The demo generator's traffic as the ingest path logs it (wire columns plus site and date), about
    ``batch`` events at a time, each batch in arrival (event time) order; ``events`` in all."""
    end = first + timedelta(days=days)
    sample = sum(
        len(item["events"])
        for item in generate_site_traffic(seed=42, currency="EUR", end=end, days=days, visitors=1_000)
        if item["kind"] == "events"
    )  # fmt: skip
    visitors = math.ceil(events / sample * 1_000 * 1.05)
    ctx = Context(site_id=SITE, site_currency="EUR", received_at=datetime.combine(end, datetime.min.time(), UTC),
                  channel="web", historical=True, client_platform="web", client_version="1.4.2")  # fmt: skip
    common = common_columns(ctx)
    traffic = generate_site_traffic(seed=42, currency="EUR", end=end, days=days, visitors=visitors)
    sessions = (item["events"] for item in traffic if item["kind"] == "events")
    left = events
    while left > 0:
        raws: list[dict] = []
        for session in sessions:
            raws.extend(session)
            if len(raws) >= batch:
                break
        if not raws:
            raise RuntimeError(f"the generator ran out {left} events short")
        columns, failures = event_log_columns(raws[:left], ctx)
        assert not failures, failures[:3]
        rows = len(columns["event_id"])
        table = pa.table({**columns, **{name: [value] * rows for name, value in common.items()}})
        left -= rows
        yield table.sort_by("ts")


def write_storefront_traffic(lake: Lake, *, events: int, per_file: int, days: int, first: date) -> None:
    """Files of ``per_file`` events in the order they arrive, split by date as the flusher splits them."""
    rest = pa.table({})
    for table in _storefront_batches(events=events, days=days, first=first):
        rows = pa.concat_tables([rest, table], promote_options="permissive") if len(rest) else table
        whole = len(rows) // per_file * per_file
        for start in range(0, whole, per_file):
            lake.write_partitioned(EVENTS, rows.slice(start, per_file), name=uuid.uuid4().hex)
        rest = rows.slice(whole)
    if len(rest):
        lake.write_partitioned(EVENTS, rest, name=uuid.uuid4().hex)


TRAFFIC = {"ids": write_ids_traffic, "storefront": write_storefront_traffic}


def timed(fn, runs: int = 3) -> tuple[float, object]:
    """Median wall time of ``runs`` calls, and the last call's result."""
    timings, result = [], None
    for _ in range(runs):
        began = time.perf_counter()
        result = fn()
        timings.append(time.perf_counter() - began)
    return statistics.median(timings), result


def time_funnel(engine: Engine, *, start: date, end: date) -> tuple[float, tuple]:
    params = {"site_id": SITE, "start_date": start, "end_date": end, "step1": STEPS[0], "step2": STEPS[1],
              "step3": STEPS[2], "step4": STEPS[3]}  # fmt: skip
    return timed(lambda: engine.cursor().execute(FUNNEL_SQL, params).fetchall()[0])


def time_library_funnel(engine: Engine, *, start: date, end: date) -> tuple[float, tuple]:
    """The funnel the product serves (every step-1 event a possible start, people across devices)."""
    query = FunnelQuery(site_id=SITE, steps=tuple(STEPS), start_date=start, end_date=end,
                        window_seconds=7 * 86_400)  # fmt: skip
    return timed(lambda: tuple(step.count for step in funnel(engine, query).steps))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--per-file", type=int, default=5_000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--traffic", choices=sorted(TRAFFIC), default="ids")
    parser.add_argument("--small-files", type=Path, metavar="DIR",
                        help="keep the small files written in DIR, or start from a copy of those kept there")  # fmt: skip
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="aisle-compaction-bench-"))
    lake = Lake(root / "lake")
    first = date(2026, 1, 5)
    began = time.perf_counter()
    copied = bool(args.small_files and (args.small_files / "events").is_dir())
    if copied:
        # Partitions are relative links into _versions: the copy keeps them pointing into itself.
        shutil.copytree(args.small_files, lake.root, symlinks=True)
    else:
        TRAFFIC[args.traffic](lake, events=args.events, per_file=args.per_file, days=args.days, first=first)
        if args.small_files:
            shutil.copytree(lake.root, args.small_files, symlinks=True)
    written = time.perf_counter() - began
    small_files = lake.files(EVENTS)
    files = len(small_files)
    events = sum(pq.read_metadata(path).num_rows for path in small_files)
    engine = Engine(lake, threads=os.cpu_count() or 2)
    end = first + timedelta(days=args.days - 1)
    small_seconds, small_result = time_funnel(engine, start=first, end=end)
    small_library_seconds, small_library = time_library_funnel(engine, start=first, end=end)

    result = compact_table(lake, EVENTS)
    compacted_seconds, compacted_result = time_funnel(engine, start=first, end=end)
    compacted_library_seconds, compacted_library = time_library_funnel(engine, start=first, end=end)
    # The same rows uncompressed (Parquet's own count of the row groups' decoded bytes).
    uncompressed = sum(
        pq.ParquetFile(path).metadata.row_group(i).total_byte_size
        for path in lake.files(EVENTS)
        for i in range(pq.ParquetFile(path).metadata.num_row_groups)
    )
    assert small_result == compacted_result, (small_result, compacted_result)
    assert small_library == compacted_library, (small_library, compacted_library)
    print(json.dumps({
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": " ".join(["bench/compaction_bench.py", *sys.argv[1:]]),
        "traffic": f"the small files kept in {args.small_files}" if copied else args.traffic,
        "events": events,
        "smallFiles": files,
        "writeSeconds": round(written, 1),
        "funnel": dict(zip(STEPS, small_result, strict=True)),
        "funnelSecondsSmallFiles": round(small_seconds, 3),
        "compaction": {"partitions": result.partitions, "filesIn": result.files_in, "filesOut": result.files_out,
                       "megabytesIn": round(result.bytes_in / 1e6, 1), "seconds": round(result.seconds, 2),
                       "megabytesPerSecond": round(result.bytes_in / 1e6 / result.seconds, 1),
                       "uncompressedMegabytes": round(uncompressed / 1e6, 1),
                       "uncompressedMegabytesPerSecond": round(uncompressed / 1e6 / result.seconds, 1)},
        "funnelSecondsCompacted": round(compacted_seconds, 3),
        "speedup": round(small_seconds / compacted_seconds, 2),
        "libraryFunnel": dict(zip(STEPS, small_library, strict=True)),
        "libraryFunnelSecondsSmallFiles": round(small_library_seconds, 3),
        "libraryFunnelSecondsCompacted": round(compacted_library_seconds, 3),
        "librarySpeedup": round(small_library_seconds / compacted_library_seconds, 2),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
