"""Wires the jobs into APScheduler; each job is a plain function tested on its own."""

from __future__ import annotations

from collections.abc import Callable

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy.engine import Engine as StoreEngine

from ingest.service import Ingest
from jobs import compaction
from warehouse.config_store import sites
from warehouse.engine import Engine


def start_scheduler(
    *,
    ingest: Ingest,
    compaction_interval_seconds: float,
    engine: Engine | None = None,
    store: StoreEngine | None = None,
) -> BackgroundScheduler:
    """``store``: the config store, read for the sites' time zones (the monthly rollups need them)."""
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(
        compaction.compact_lake,
        "interval",
        seconds=compaction_interval_seconds,
        id=compaction.JOB_ID,
        args=[ingest, engine, _timezones(store) if store is not None else None],
        max_instances=1,
        coalesce=True,
    )
    scheduler.start()
    return scheduler


def _timezones(store: StoreEngine) -> Callable[[], dict[str, str]]:
    """Reads every site's time zone from the config store, at each call."""

    def timezones() -> dict[str, str]:
        with store.connect() as conn:
            return sites.timezones(conn)

    return timezones
