"""Query benchmark: the analytics library over N generated events stored as the lake stores them
(one site, daily partitions, compacted), timed end to end through the same functions the routes call.

    .venv/bin/python bench/queries_bench.py [--events 10000000] [--days 28] [--visitors 500000]

Still to add (issue 4): ClickHouse windowFunnel/retention in chDB and a polars implementation side by
side on the same Parquet files, and the 100 M run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.compaction_bench import SITE, STEPS, make_file, timed  # noqa: E402
from queries.cohort import CohortQuery, cohort_report  # noqa: E402
from queries.funnel import FunnelQuery, funnel  # noqa: E402
from queries.journeys import JourneyRange, journey_stats  # noqa: E402
from queries.overview import Scope, overview  # noqa: E402
from warehouse.compaction import compact_table  # noqa: E402
from warehouse.engine import Engine  # noqa: E402
from warehouse.lake import EVENTS, Lake  # noqa: E402

FIRST = date(2026, 1, 5)  # a Monday


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--visitors", type=int, default=500_000)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    lake = Lake(Path(tempfile.mkdtemp(prefix="aisle-queries-bench-")) / "lake")
    per_day = args.events // args.days
    began = time.perf_counter()
    for day_number in range(args.days):
        day = FIRST + timedelta(days=day_number)
        for chunk in range(0, per_day, 1_000_000):
            rows = min(1_000_000, per_day - chunk)
            table = make_file(
                rng, start=day_number * per_day + chunk, rows=rows, day=day, visitors=args.visitors
            )
            lake.write_file(EVENTS, table, site_id=SITE, date=day.isoformat())
    compact_table(lake, EVENTS)
    written = time.perf_counter() - began
    engine = Engine(lake, threads=os.cpu_count() or 2)
    last = FIRST + timedelta(days=args.days - 1)

    funnel_seconds, funnel_report = timed(lambda: funnel(engine, FunnelQuery(
        site_id=SITE, steps=tuple(STEPS), start_date=FIRST, end_date=last, window_seconds=7 * 86_400)))  # fmt: skip
    cohort_seconds, _ = timed(lambda: cohort_report(engine, CohortQuery(
        site_id=SITE, cohort_type="first_visit", interval="week", start_date=FIRST, end_date=last,
        period_count=12)))  # fmt: skip
    journeys_seconds, _ = timed(
        lambda: journey_stats(engine, JourneyRange(site_id=SITE, start_date=FIRST, end_date=last))
    )
    overview_seconds, _ = timed(lambda: overview(engine, Scope((SITE,), FIRST, last)))
    print(json.dumps({
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": " ".join(["bench/queries_bench.py", *sys.argv[1:]]),
        "events": per_day * args.days,
        "prepareSeconds": round(written, 1),
        "funnel4StepsSeconds": round(funnel_seconds, 3),
        "funnelCounts": [s.count for s in funnel_report.steps],
        "cohortWeekly12Seconds": round(cohort_seconds, 3),
        "journeyStatsSeconds": round(journeys_seconds, 3),
        "overviewSeconds": round(overview_seconds, 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
