"""Liveness and readiness: config store, data directory, the events flusher process and (when configured)
Redis and the Redis log."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from warehouse.config_store.store import ping, schema_version

router = APIRouter(tags=["health"])


# A probe (a load balancer's) waits a few seconds at most: a dependency that accepts connections but
# does not answer (a stalled Redis) must show as failing before then, not after its client's retries.
DEADLINE_SECONDS = 2.0
# Checks still waiting on a stalled dependency keep their thread; a few spare ones serve new probes.
_checks = ThreadPoolExecutor(max_workers=16, thread_name_prefix="health")


def _check(fn) -> dict[str, Any]:
    try:
        detail = fn()
        return {"ok": True, **({"detail": detail} if detail else {})}
    except Exception as exc:  # a health check reports failures, it does not raise them
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _run_checks(checks: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every check at once, each reported as failing when it has not answered by the deadline."""
    pending = {name: _checks.submit(_check, fn) for name, fn in checks.items()}
    wait(pending.values(), timeout=DEADLINE_SECONDS)
    return {
        name: future.result()
        if future.done()
        else {"ok": False, "error": f"no answer within {DEADLINE_SECONDS:g} s"}
        for name, future in pending.items()
    }


@router.get("/health")
def health(request: Request) -> JSONResponse:
    """200 when every dependency answers, 503 with the failing checks otherwise (a check that has not
    answered within 2 s fails)."""
    state = request.app.state
    data_dir = state.settings.data_dir

    def data_dir_check() -> str:
        if not data_dir.is_dir() or not os.access(data_dir, os.W_OK):
            raise OSError(f"{data_dir} is not a writable directory")
        return str(data_dir.resolve())

    def store_check() -> str:
        ping(state.store)
        return f"schema {schema_version(state.store)}"

    probes = {"configStore": store_check, "dataDir": data_dir_check}
    if state.settings.redis_url:
        probes["redis"] = state.hot.ping
    if state.ingest.has_flusher_process:
        probes["eventsFlusher"] = state.ingest.flusher_status
    if state.settings.stream_url:
        # Informative: a server accepts and answers while `aisle flush` is away; the lake lags.
        probes["durableLog"] = state.ingest.backlog
    checks = _run_checks(probes)
    healthy = all(c["ok"] for c in checks.values())
    return JSONResponse(
        {"status": "ok" if healthy else "degraded", "checks": checks}, 200 if healthy else 503
    )
