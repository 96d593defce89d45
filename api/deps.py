"""Typed dependencies: routes name what they need (``ConfigStoreDep``, ``EngineDep``, ``CurrentUser``,
``ReadableSite``...), and only this module (and ``api.app``) reads the application's state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from aisle.settings import Settings
from api.auth import mfa, tokens
from api.auth.permissions import SITES_READ, SITES_WRITE, permissions_for
from api.errors import Forbidden, Unauthorized
from api.schemas import SITE_ID_FORMAT
from api.sites.service import canonical_site_id as canonical_site_id
from api.sites.service import get_owned
from api.sites.service import site_access_denied as site_access_denied
from api.throttle import GuessThrottle
from api.tracking.service import EventBatches
from ingest.batch_worker import BatchWorkers
from ingest.service import Ingest
from jobs.mail import Outbox
from queries.adhoc.sandbox import Sandbox
from warehouse.config_store import refresh_tokens, users
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine
from warehouse.hotstate import HotState


def _app_state(name: str) -> Any:
    """A dependency answering the application's state attribute ``name``. Async, so FastAPI calls it
    inline rather than through the thread pool."""

    async def read(request: Request) -> Any:
        return getattr(request.app.state, name)

    return Depends(read)


SettingsDep = Annotated[Settings, _app_state("settings")]
ConfigStoreDep = Annotated[ConfigStore, _app_state("store")]
# DuckDB over the lake: what `queries` functions run on.
EngineDep = Annotated[Engine, _app_state("engine")]
IngestDep = Annotated[Ingest, _app_state("ingest")]
BatchWorkersDep = Annotated[BatchWorkers | None, _app_state("batch_workers")]
SqlSandboxDep = Annotated[Sandbox, _app_state("sql_sandbox")]
HotStateDep = Annotated[HotState, _app_state("hot")]
OutboxDep = Annotated[Outbox, _app_state("outbox")]
# What the storefront's events batch needs (the hot path is handed the same object by the app factory).
EventBatchesDep = Annotated[EventBatches, _app_state("event_batches")]


async def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


ClientAddress = Annotated[str, Depends(client_address)]


@dataclass(frozen=True)
class Principal:
    user_id: str
    organization_id: str
    role: str
    is_platform_admin: bool
    permissions: frozenset[str]
    email: str

    def can(self, permission: str) -> bool:
        return permission in self.permissions


# Declared through FastAPI's scheme so the OpenAPI schema names the Bearer requirement of every private
# operation; the missing-token answer stays ours (auto_error would answer FastAPI's own 403).
_BEARER = HTTPBearer(
    scheme_name="bearerAuth",
    bearerFormat="JWT",
    description="An access token from POST /auth/login (or /auth/refresh), as 'Authorization: Bearer <token>'.",
    auto_error=False,
)


def _principal(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    settings: SettingsDep,
    store: ConfigStoreDep,
) -> Principal:
    try:
        return _principal_of(credentials, settings, store)
    except Unauthorized as refused:
        # Every 401 names the scheme to answer it with (RFC 9110 §15.5.2), whatever the reason.
        refused.headers = {**(refused.headers or {}), "WWW-Authenticate": "Bearer"}
        raise


def _principal_of(
    credentials: HTTPAuthorizationCredentials | None, settings: Settings, store: ConfigStore
) -> Principal:
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized("Send an access token as 'Authorization: Bearer <token>'", code="AUTH_REQUIRED")
    claims = tokens.read(settings.signing_key, credentials.credentials.strip(), kind="access")
    session = claims.get("sid")
    with store.connect() as conn:
        user = users.get(conn, user_id=claims["sub"])
        active = isinstance(session, str) and refresh_tokens.family_active(conn, family_id=session)
    if user is None:
        raise Unauthorized("The account no longer exists", code="TOKEN_INVALID")
    if not active:
        raise Unauthorized(
            "The session has ended (logged out or revoked); log in again", code="SESSION_REVOKED"
        )
    return Principal(
        user_id=user["id"],
        organization_id=user["organization_id"],
        role=user["role"],
        is_platform_admin=bool(user["is_platform_admin"]),
        permissions=permissions_for(user["role"]),
        email=user["email"],
    )


CurrentUser = Annotated[Principal, Depends(_principal)]


async def _mfa_guesses(principal: CurrentUser, hot: HotStateDep, settings: SettingsDep) -> GuessThrottle:
    return mfa.guess_throttle(hot, settings, user_id=principal.user_id)


# Wrong MFA codes of the caller's account (shared with the login's MFA step).
MfaGuesses = Annotated[GuessThrottle, Depends(_mfa_guesses)]


def require(permission: str):
    """Dependency that answers 403 unless the caller's role grants ``permission``."""

    def _check(principal: CurrentUser) -> Principal:
        if not principal.can(permission):
            raise Forbidden(f"Your role lacks the permission '{permission}'", code="PERMISSION_DENIED")
        return principal

    return Depends(_check)


def _platform_admin(principal: CurrentUser) -> Principal:
    if not principal.is_platform_admin:
        raise Forbidden("Only platform administrators may do this", code="PLATFORM_ADMIN_REQUIRED")
    return principal


PlatformAdmin = Annotated[Principal, Depends(_platform_admin)]


def load_owned_site(store: ConfigStore, principal: Principal, site_id: str) -> Site:
    """The site, if the caller's organisation owns it (``api.sites.service.get_owned``)."""
    return get_owned(store, organization_id=principal.organization_id, site_id=site_id)


def _site_reader(permission: str, param: str):
    def _load(
        store: ConfigStoreDep,
        principal: CurrentUser,
        site_id: str = Path(alias=param, json_schema_extra=SITE_ID_FORMAT),
    ) -> Site:
        site = load_owned_site(store, principal, site_id)
        if not principal.can(permission):
            raise Forbidden(f"Your role lacks the permission '{permission}'", code="PERMISSION_DENIED")
        return site

    return Depends(_load)


# Site-scoped routes use `:id` (sites area) or `:siteId` (everything else) in the spec.
ReadableSite = Annotated[Site, _site_reader(SITES_READ, "id")]
WritableSite = Annotated[Site, _site_reader(SITES_WRITE, "id")]
ReadableSiteById = Annotated[Site, _site_reader(SITES_READ, "siteId")]
WritableSiteById = Annotated[Site, _site_reader(SITES_WRITE, "siteId")]
