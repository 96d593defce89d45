"""Bodies and answers of the sites routes."""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, available_timezones

import duckdb
from pydantic import Field, GetJsonSchemaHandler, WithJsonSchema, field_validator
from pydantic.json_schema import JsonSchemaValue

from api.schemas import CURRENCY_ENUM, CamelModel, StrictCamelModel
from ingest.currency import normalise_currency

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# The schema states the host names normalise_domain keeps as they are (a URL or host:port is reduced
# to its host too, which the description says): labels of _LABEL, two or more but for localhost.
_LABEL_TEXT = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME: dict[str, Any] = {"pattern": f"^(localhost|{_LABEL_TEXT}(\\.{_LABEL_TEXT})+)$", "maxLength": 253}
DOMAIN_DESCRIPTION = (
    "Storefront host, such as shop.example.com; public calls must come from it. A URL or host:port is "
    "read as its host."
)


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
    # lists `localtime` (the machine's own zone), which DuckDB does not know: every report would fail.
    known = {row[0] for row in duckdb.execute("SELECT name FROM pg_timezone_names()").fetchall()}
    return frozenset(available_timezones() & known) | {"UTC"}


class _ReportZones:
    """The zones _timezone accepts, as an enum in the schema (read when the schema is built)."""

    def __get_pydantic_json_schema__(
        self, core_schema: Any, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(core_schema), "enum": sorted(_report_zones())}


ZONE_DESCRIPTION = "IANA zone used for day/week/month buckets in reports."
TimeZoneName = Annotated[str, _ReportZones()]


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
        min_length=1, max_length=300, description=DOMAIN_DESCRIPTION, json_schema_extra=HOST_NAME
    )
    currency: str = Field(
        default="EUR",
        description="ISO-4217, three letters; stored uppercase.",
        json_schema_extra=CURRENCY_ENUM,
    )
    timezone: TimeZoneName = Field(default="UTC", description=ZONE_DESCRIPTION)

    _domain = field_validator("domain")(lambda v: normalise_domain(v))
    _currency = field_validator("currency")(lambda v: _currency(v))
    _timezone = field_validator("timezone")(lambda v: _timezone(v))


class SiteUpdate(StrictCamelModel):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    domain: Annotated[str, WithJsonSchema({"type": "string", **HOST_NAME})] | None = Field(
        default=None, min_length=1, max_length=300, description=DOMAIN_DESCRIPTION
    )
    currency: Annotated[str, WithJsonSchema({"type": "string", **CURRENCY_ENUM})] | None = Field(
        default=None, description="ISO-4217, three letters; stored uppercase."
    )
    timezone: TimeZoneName | None = Field(default=None, description=ZONE_DESCRIPTION)

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


class VerificationCheck(CamelModel):
    method: Literal["dns", "http"] | None = Field(description="None when the site was verified already.")
    ok: bool
    detail: str


class VerifyResult(CamelModel):
    verified: bool
    method: Literal["dns", "http"] | None
    checks: list[VerificationCheck] = Field(description="In the order tried; DNS first.")
    site: SiteOut


class SiteFeed(CamelModel):
    site_id: str
    name: str
    domain: str
    site_key: str
    currency: str
    is_verified: bool
    accepts_events: bool
    blockers: list[Literal["DOMAIN_NOT_VERIFIED"]] = Field(
        description="What keeps the site's runtime feed shut."
    )


class FeedsSummary(CamelModel):
    total_sites: int
    verified_sites: int
    sites: list[SiteFeed]


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
