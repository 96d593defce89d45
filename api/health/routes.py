"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import ConfigStoreDep, HotStateDep, IngestDep, SettingsDep
from api.health import service
from api.health.schemas import HealthReport

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    response_model=HealthReport,
    # A check reports `detail` or `error`, never both: the one it lacks is left out.
    response_model_exclude_none=True,
    responses={503: {"model": HealthReport, "description": "At least one check failed (`degraded`)."}},
)
def health(
    settings: SettingsDep, store: ConfigStoreDep, hot: HotStateDep, ingest: IngestDep, response: Response
) -> HealthReport:
    """200 when every dependency answers, 503 with the failing checks otherwise (a check that has not
    answered within 2 s fails)."""
    report = service.check(settings=settings, store=store, hot=hot, ingest=ingest)
    if report.status != "ok":
        response.status_code = 503
    return report
