"""Wires the jobs into APScheduler; each job is a plain function tested on its own."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.schedulers.background import BackgroundScheduler

from ingest.service import Ingest
from jobs import compaction, product_catalog
from warehouse.config_store import sites
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine


def start_scheduler(
    *,
    ingest: Ingest,
    compaction_interval_seconds: float,
    engine: Engine | None = None,
    store: ConfigStore | None = None,
    catalog_interval_seconds: float = product_catalog.INTERVAL_SECONDS,
) -> BackgroundScheduler:
    """``store``: the config store, read for the sites' time zones (the monthly rollups need them).
    With both ``engine`` and ``store``, the product catalogs are kept up to date too: on an interval,
    and after every explicit flush of ``ingest``."""
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
    if engine is not None and store is not None:
        scheduler.add_job(
            product_catalog.sync_product_catalogs,
            "interval",
            seconds=catalog_interval_seconds,
            id=product_catalog.JOB_ID,
            args=[store, engine],
            max_instances=1,
            coalesce=True,
            # What arrived while no server ran (an `aisle import`) is in the catalogs soon after start.
            next_run_time=datetime.now(UTC),
        )

        def sync_catalogs_after_flush() -> None:
            # Only while the scheduler runs: once it is shut down, the engine and store go too.
            if scheduler.running:
                product_catalog.sync_product_catalogs(store, engine)

        ingest.after_flush(sync_catalogs_after_flush)
    scheduler.start()
    return scheduler


def _timezones(store: ConfigStore) -> Callable[[], dict[str, str]]:
    """Reads every site's time zone from the config store, at each call."""

    def timezones() -> dict[str, str]:
        with store.connect() as conn:
            return sites.timezones(conn)

    return timezones
