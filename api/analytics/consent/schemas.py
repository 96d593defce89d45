"""The consent area's wire: the simulation's body, the comparison of sites, and the reports of
``queries.consent`` its routes return as they are."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema

from aisle.wire import CamelModel
from api.schemas import StrictCamelModel
from ingest.consent import CATEGORIES
from queries.consent import (
    ConsentCategories,
    ConsentImpact,
    ConsentSimulation,
    ConsentStats,
    ConsentTrends,
    ExportRow,
)

__all__ = [
    "ConsentCategories",
    "ConsentComparison",
    "ConsentImpact",
    "ConsentSimulation",
    "ConsentStats",
    "ConsentTrends",
    "ExportRow",
    "SimulateIn",
    "SiteConsent",
]


class SimulateIn(StrictCamelModel):
    granular_enabled: bool | None = Field(
        default=None,
        description="Granular gating (each required category checked on its own). False: one switch covers "
        "every category, so an event needs all four granted and `requiredCategories` is ignored. Default: "
        "the site's cookieConsent `granular`, else true.",
    )
    # Checked by the service (400 `UNKNOWN_CONSENT_CATEGORY`), listed in the schema.
    required_categories: (
        list[Annotated[str, WithJsonSchema({"type": "string", "enum": list(CATEGORIES)})]] | None
    ) = Field(
        default=None,
        max_length=4,
        description="Categories an event needs granted (granular only): a subset of necessary, analytics, "
        "marketing, preferences; empty: nothing is gated. Default: the site's cookieConsent "
        '`requiredCategories`, else ["analytics"].',
    )
    timeout_ms: int | None = Field(
        default=None,
        ge=0,
        le=600_000,
        description="How long an event waits for consent (0 to 600000 ms). Default: the site's cookieConsent "
        "`timeoutMs`, else 0 (no waiting).",
    )


class SiteConsent(ConsentStats):
    site_name: str
    timezone: str


class ConsentComparison(CamelModel):
    sites: list[SiteConsent]
