"""The public guard, in the spec's order: site key, verified, origin (or mobile key), subscription."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlparse

from fastapi import Depends, Path, Request, Response

from aisle.settings import Settings
from api.deps import ClientAddress, ConfigStoreDep, HotStateDep, IngestDep, SettingsDep
from api.errors import BadRequest, Forbidden, NotFound, ServiceUnavailable, Unauthorized, error_response
from api.sites import keys
from api.store_io import off_loop
from api.throttle import Limit, throttle
from ingest.service import Ingest
from warehouse.config_store import organizations, site_cache
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.hotstate import HotState

API_KEY_HEADER = "x-aisle-api-key"
PLATFORM_HEADER = "x-aisle-client-platform"
VERSION_HEADER = "x-aisle-client-version"

READ_METHODS = {"GET", "HEAD", "OPTIONS"}
# What every public route answers besides the app's 400, 401 and 403: the guard's unknown key, and
# its throttle (each route counts its callers).
PUBLIC_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: error_response("Unknown site key (SITE_NOT_FOUND)."),
    429: error_response("Throttled (RATE_LIMITED): retry after `Retry-After` seconds."),
}
# The client headers are stored on every row of the request, like an event's fields: bounded alike.
MAX_CLIENT_HEADER_LENGTH = 64


@dataclass(frozen=True)
class PublicCaller:
    site: Site
    channel: str  # "web" (origin matched) or "mobile" (API key)
    api_key_id: str | None
    client_platform: str | None
    client_version: str | None


def host_matches(host: str | None, domain: str) -> bool:
    """The site domain itself or any of its subdomains (`www.`, `m.`...)."""
    if not host:
        return False
    host = host.lower().rstrip(".")
    return host == domain or host.endswith("." + domain)


def request_host(value: str) -> str | None:
    """The host of an Origin or Referer value; None when it does not parse (e.g. `http://[x`)."""
    try:
        return urlparse(value).hostname
    except ValueError:
        return None


def required_scope(method: str) -> str:
    return "mobile_read" if method.upper() in READ_METHODS else "mobile_write"


def _check_mobile_key(request: Request, store: ConfigStore, site: Site) -> str:
    scope = required_scope(request.method)
    presented = request.headers.get(API_KEY_HEADER)
    if not presented:
        raise Unauthorized(
            f"Requests without Origin or Referer need a site API key in '{API_KEY_HEADER}'",
            code="API_KEY_REQUIRED",
        )
    record = keys.authenticate(store, site_id=site["id"], presented=presented)
    if record is None:
        raise Unauthorized("API key is invalid or revoked", code="API_KEY_INVALID")
    if scope not in record["scopes"]:
        raise Forbidden(f"API key lacks the scope '{scope}'", code="API_KEY_SCOPE_MISSING")
    return record["id"]


async def guard_public_site(
    request: Request, store: ConfigStoreDep, site_key: str = Path(alias="siteKey")
) -> PublicCaller:
    # Async and cached: this runs on every storefront call, so a hit stays off the thread pool; a
    # miss asks the store from a thread (a stalled store must not hold the event loop).
    hit = site_cache.cached(site_key)
    if hit is None:
        try:
            hit = await off_loop(store, site_cache.site_and_organization, store, site_key)
        except ServiceUnavailable:
            # The store is away: a site seen minutes ago keeps its storefront's events coming.
            hit = site_cache.stale(site_key)
            if hit is None:
                raise
    site, org = hit
    if site is None:
        raise NotFound("Unknown site key", code="SITE_NOT_FOUND")
    if not site["is_verified"]:
        raise Forbidden("Site not verified", code="SITE_NOT_VERIFIED")
    page = request.headers.get("origin") or request.headers.get("referer")
    api_key_id = None
    if page:
        if not host_matches(request_host(page), site["domain"]):
            raise Forbidden("Origin validation failed", code="ORIGIN_VALIDATION_FAILED")
        channel = "web"
    else:
        api_key_id = await off_loop(store, _check_mobile_key, request, store, site)
        channel = "mobile"
    if org is None or not organizations.subscription_is_valid(org):
        raise Forbidden("Subscription is not active", code="SUBSCRIPTION_INVALID")
    return PublicCaller(
        site=site,
        channel=channel,
        api_key_id=api_key_id,
        client_platform=_client_header(request, PLATFORM_HEADER),
        client_version=_client_header(request, VERSION_HEADER),
    )


def _client_header(request: Request, name: str) -> str | None:
    value = request.headers.get(name)
    if value is not None and not value.isascii():
        # Header bytes arrive decoded as Latin-1; a library sending UTF-8 ("é") meant its characters.
        with contextlib.suppress(UnicodeError):
            value = value.encode("latin-1").decode("utf-8")
    if value is not None and len(value) > MAX_CLIENT_HEADER_LENGTH:
        raise BadRequest(
            f"{name} is longer than {MAX_CLIENT_HEADER_LENGTH} characters", code="CLIENT_HEADER_TOO_LONG"
        )
    return value


PublicSite = Annotated[PublicCaller, Depends(guard_public_site)]


@dataclass(frozen=True)
class PublicCall:
    """A guarded public call and what its route reads, writes and counts it with."""

    request: Request
    caller: PublicCaller
    ingest: Ingest
    hot: HotState
    settings: Settings
    address: str  # the client's address: the subject when a body names no visitor
    response: Response

    def throttle(self, name: str, per_minute: int, subject: str) -> dict[str, str]:
        """Count the call against the site's `per_minute` limit `name` for `subject` (429 once it is
        spent); the rate-limit headers, also set on the response."""
        limit = Limit(name, per_minute, 60)
        return throttle(self.hot, self.response, limit=limit, subject=f"{self.caller.site['id']}:{subject}")


async def _public_call(
    request: Request,
    caller: PublicSite,
    ingest: IngestDep,
    hot: HotStateDep,
    settings: SettingsDep,
    address: ClientAddress,
    response: Response,
) -> PublicCall:
    return PublicCall(request, caller, ingest, hot, settings, address, response)


# What a throttled public route takes: the guard's caller plus ingestion, hot state, settings, the
# client's address and the response its rate-limit headers go on.
PublicCallDep = Annotated[PublicCall, Depends(_public_call)]
