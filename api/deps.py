"""Typed dependencies: routes name what they need (``ConfigStoreDep``, ``EngineDep``, ``CurrentUser``,
``ReadableSite``...), and only this module (and ``api.app``) reads the application's state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

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


# Plain accessors are async so FastAPI calls them inline rather than through the thread pool.
async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _store(request: Request) -> ConfigStore:
    return request.app.state.store


async def _engine(request: Request) -> Engine:
    return request.app.state.engine


async def _ingest(request: Request) -> Ingest:
    return request.app.state.ingest


async def _batch_workers(request: Request) -> BatchWorkers | None:
    return request.app.state.batch_workers


async def _sql_sandbox(request: Request) -> Sandbox:
    return request.app.state.sql_sandbox


async def _hot(request: Request) -> HotState:
    return request.app.state.hot


async def _outbox(request: Request) -> Outbox:
    return request.app.state.outbox


async def _event_batches(request: Request) -> EventBatches:
    return request.app.state.event_batches


SettingsDep = Annotated[Settings, Depends(_settings)]
ConfigStoreDep = Annotated[ConfigStore, Depends(_store)]
# DuckDB over the lake: what `queries` functions run on.
EngineDep = Annotated[Engine, Depends(_engine)]
IngestDep = Annotated[Ingest, Depends(_ingest)]
BatchWorkersDep = Annotated[BatchWorkers | None, Depends(_batch_workers)]
SqlSandboxDep = Annotated[Sandbox, Depends(_sql_sandbox)]
HotStateDep = Annotated[HotState, Depends(_hot)]
OutboxDep = Annotated[Outbox, Depends(_outbox)]
# What the storefront's events batch needs (the hot path is handed the same object by the app factory).
EventBatchesDep = Annotated[EventBatches, Depends(_event_batches)]


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
