"""Liveness and readiness checks: config store, data directory, the events flusher process and (when
configured) Redis and the Redis log."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from aisle.settings import Settings
from api.health.schemas import Check, HealthReport
from ingest.service import Ingest
from warehouse.config_store.store import ConfigStore, ping, schema_version
from warehouse.hotstate import HotState

# A probe (a load balancer's) waits a few seconds at most: a dependency that accepts connections but
# does not answer (a stalled Redis) must show as failing before then, not after its client's retries.
DEADLINE_SECONDS = 2.0
# Checks still waiting on a stalled dependency keep their thread; a few spare ones serve new probes.
_checks = ThreadPoolExecutor(max_workers=16, thread_name_prefix="health")


def _check(fn: Callable[[], str | None]) -> Check:
    try:
        return Check(ok=True, detail=fn() or None)
    except Exception as exc:  # a health check reports failures, it does not raise them
        return Check(ok=False, error=f"{type(exc).__name__}: {exc}")


def _run_checks(checks: dict[str, Callable[[], str | None]]) -> dict[str, Check]:
    """Every check at once, each reported as failing when it has not answered by the deadline."""
    pending = {name: _checks.submit(_check, fn) for name, fn in checks.items()}
    wait(pending.values(), timeout=DEADLINE_SECONDS)
    return {
        name: future.result()
        if future.done()
        else Check(ok=False, error=f"no answer within {DEADLINE_SECONDS:g} s")
        for name, future in pending.items()
    }


def check(*, settings: Settings, store: ConfigStore, hot: HotState, ingest: Ingest) -> HealthReport:
    data_dir = settings.data_dir

    def data_dir_check() -> str:
        if not data_dir.is_dir() or not os.access(data_dir, os.W_OK):
            raise OSError(f"{data_dir} is not a writable directory")
        return str(data_dir.resolve())

    def store_check() -> str:
        ping(store)
        return f"schema {schema_version(store)}"

    probes: dict[str, Callable[[], str | None]] = {"configStore": store_check, "dataDir": data_dir_check}
    if settings.redis_url:
        probes["redis"] = hot.ping
    if ingest.has_flusher_process:
        probes["eventsFlusher"] = ingest.flusher_status
    if settings.stream_url:
        # Informative: a server accepts and answers while `aisle flush` is away; the lake lags.
        probes["durableLog"] = ingest.backlog
    checks = _run_checks(probes)
    return HealthReport(status="ok" if all(c.ok for c in checks.values()) else "degraded", checks=checks)
