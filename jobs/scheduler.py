"""Wires the jobs into APScheduler; each job is a plain function tested on its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from apscheduler.schedulers.background import BackgroundScheduler

from ingest.service import Ingest
from jobs import compaction
from warehouse.engine import Engine


def start_scheduler(
    *, ingest: Ingest, compaction_interval_seconds: float, engine: Engine | None = None,
    timezones: Callable[[], Mapping[str, str]] | None = None,
) -> BackgroundScheduler:  # fmt: skip
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(
        compaction.compact_lake,
        "interval",
        seconds=compaction_interval_seconds,
        id=compaction.JOB_ID,
        args=[ingest, engine, timezones],
        max_instances=1,
        coalesce=True,
    )
    scheduler.start()
    return scheduler
