"""The health report."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.schemas import CamelModel


class Check(CamelModel):
    ok: bool
    detail: str | None = Field(default=None, description="What the check found, when it says more than ok.")
    error: str | None = Field(default=None, description="Why the check failed.")


class HealthReport(CamelModel):
    status: Literal["ok", "degraded"]
    checks: dict[str, Check] = Field(
        description="By dependency: configStore, dataDir, and when configured redis, eventsFlusher, durableLog."
    )
