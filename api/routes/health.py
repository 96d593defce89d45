"""Liveness and readiness: config store, data directory, the events flusher process and (when configured)
Redis and the Redis log."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from warehouse.catalog.store import ping, schema_version

router = APIRouter(tags=["health"])


def _check(fn) -> dict[str, Any]:
    try:
        detail = fn()
        return {"ok": True, **({"detail": detail} if detail else {})}
    except Exception as exc:  # a health check reports failures, it does not raise them
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


@router.get("/health")
def health(request: Request) -> JSONResponse:
    """200 when every dependency answers, 503 with the failing checks otherwise."""
    state = request.app.state
    data_dir = state.settings.data_dir

    def data_dir_check() -> str:
        if not data_dir.is_dir() or not os.access(data_dir, os.W_OK):
            raise OSError(f"{data_dir} is not a writable directory")
        return str(data_dir.resolve())

    def store_check() -> str:
        ping(state.store)
        return f"schema {schema_version(state.store)}"

    checks = {"configStore": _check(store_check), "dataDir": _check(data_dir_check)}
    if state.settings.redis_url:
        checks["redis"] = _check(state.hot.ping)
    if state.ingest.has_flusher_process:
        checks["eventsFlusher"] = _check(state.ingest.flusher_status)
    if state.settings.stream_url:
        # Informative: a server accepts and answers while `aisle flush` is away; the lake lags.
        checks["durableLog"] = _check(state.ingest.backlog)
    healthy = all(c["ok"] for c in checks.values())
    return JSONResponse(
        {"status": "ok" if healthy else "degraded", "checks": checks}, 200 if healthy else 503
    )
