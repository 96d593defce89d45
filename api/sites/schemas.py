"""Bodies and answers of the sites routes."""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, available_timezones

import duckdb
from pydantic import Field, field_validator

from api.schemas import CamelModel, StrictCamelModel
from ingest.currency import normalise_currency

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def normalise_domain(value: str) -> str:
    """Accepts `shop.example.com`, `https://shop.example.com/path` or `Shop.Example.com:443`."""
    text = value.strip().lower()
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text)
    text = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    text = text.rsplit("@", 1)[-1]
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    text = text.rstrip(".")
    try:
        text = text.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"'{value}' is not a valid domain name") from exc
    labels = text.split(".")
    if len(text) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"'{value}' is not a valid domain name (expected something like shop.example.com)")
    if len(labels) < 2 and text != "localhost":
        raise ValueError(
            f"'{value}' is not a fully qualified domain name (expected something like shop.example.com)"
        )
    return text


CURRENCY_PATTERN = "^[A-Z]{3}$"


def _currency(value: str | None) -> str | None:
    return None if value is None else normalise_currency(value)


@cache
def _report_zones() -> frozenset[str]:
    # The zones both Python and DuckDB know: reports bucket in DuckDB. The system's tz database also
    # lists `localtime` (the machine's own zone), which DuckDB does not know: every report was a 500.
    known = {row[0] for row in duckdb.sql("SELECT name FROM pg_timezone_names()").fetchall()}
    return frozenset(available_timezones() & known) | {"UTC"}


def _timezone(value: str | None) -> str | None:
    if value is None:
        return None
    if value not in _report_zones():
        raise ValueError(f"'{value}' is not an IANA time zone (such as Europe/Berlin or UTC)")
    ZoneInfo(value)
    return value


class SiteCreate(StrictCamelModel):
    name: str = Field(min_length=1, max_length=200)
    domain: str = Field(
        min_length=1, max_length=300, description="Storefront host; public calls must come from it."
    )
    currency: str = Field(default="EUR", description="ISO-4217, three letters; stored uppercase.")
    timezone: str = Field(default="UTC", description="IANA zone used for day/week/month buckets in reports.")

    _domain = field_validator("domain")(lambda v: normalise_domain(v))
    _currency = field_validator("currency")(lambda v: _currency(v))
    _timezone = field_validator("timezone")(lambda v: _timezone(v))


class SiteUpdate(StrictCamelModel):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    domain: str | None = Field(default=None, min_length=1, max_length=300)
    currency: str | None = None
    timezone: str | None = None

    _domain = field_validator("domain")(lambda v: None if v is None else normalise_domain(v))
    _currency = field_validator("currency")(lambda v: _currency(v))
    _timezone = field_validator("timezone")(lambda v: _timezone(v))


class AdminSiteUpdate(SiteUpdate):
    is_verified: bool | None = None


class Verification(CamelModel):
    token: str
    dns_record_name: str
    dns_record_value: str
    http_url: str


class SiteOut(CamelModel):
    id: str
    organization_id: str
    name: str
    domain: str
    site_key: str
    currency: str = Field(pattern=CURRENCY_PATTERN, description="ISO-4217, three uppercase letters.")
    timezone: str
    is_verified: bool
    verified_at: datetime | None
    verification: Verification
    created_at: datetime
    updated_at: datetime


class ApiKeyCounts(CamelModel):
    active: int
    revoked: int


class TrackingSummary(CamelModel):
    data_layer_enabled: bool
    modules_enabled: list[str]


class SiteStats(CamelModel):
    site_id: str
    is_verified: bool
    currency: str = Field(pattern=CURRENCY_PATTERN, description="ISO-4217, three uppercase letters.")
    timezone: str
    api_keys: ApiKeyCounts
    tracking: TrackingSummary
    created_at: datetime


class VerifyResult(CamelModel):
    verified: bool
    method: Literal["dns", "http"] | None
    checks: list[dict[str, Any]]
    site: SiteOut


class ApiKeyCreate(StrictCamelModel):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[Literal["mobile_read", "mobile_write"]] = Field(min_length=1)

    @field_validator("scopes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return sorted(set(value))


class ApiKeyOut(CamelModel):
    id: str
    site_id: str
    name: str
    scopes: list[str]
    prefix: str
    status: Literal["active", "revoked"]
    last_used_at: datetime | None
    revoked_at: datetime | None
    created_at: datetime


class ApiKeyWithSecret(ApiKeyOut):
    key: str = Field(description="The secret; shown only in this answer. Send it as `x-aisle-api-key`.")
