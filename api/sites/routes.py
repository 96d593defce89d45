"""Sites routes: the spec's Sites and Mobile keys rows, and the admin site update."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from api.auth.permissions import SITES_WRITE
from api.deps import (
    ConfigStoreDep,
    CurrentUser,
    PlatformAdmin,
    ReadableSite,
    ReadableSiteById,
    SettingsDep,
    WritableSite,
    WritableSiteById,
    require,
)
from api.errors import error_response
from api.schemas import Ok
from api.sites import service
from api.sites.schemas import (
    AdminSiteUpdate,
    ApiKeyCreate,
    ApiKeyOut,
    ApiKeyWithSecret,
    FeedsSummary,
    SiteCreate,
    SiteOut,
    SiteStats,
    SiteUpdate,
    VerifyResult,
)
from api.sites.tracking_config import TrackerConfig

router = APIRouter(tags=["sites"])


@router.post("/sites", status_code=201, response_model=SiteOut, dependencies=[require(SITES_WRITE)])
def create_site(body: SiteCreate, store: ConfigStoreDep, principal: CurrentUser) -> SiteOut:
    """Create a site in the caller's organisation. It accepts public traffic once its domain is verified."""
    return service.create(
        store, organization_id=principal.organization_id, user_id=principal.user_id, body=body
    )


@router.get("/sites", response_model=list[SiteOut])
def list_sites(store: ConfigStoreDep, principal: CurrentUser) -> list[SiteOut]:
    """The sites of the caller's organisation, oldest first."""
    return service.list_for_organization(store, organization_id=principal.organization_id)


@router.get("/sites/feeds-summary", response_model=FeedsSummary)
def feeds_summary(store: ConfigStoreDep, principal: CurrentUser) -> FeedsSummary:
    """Which of the organisation's sites accept runtime traffic, and what blocks the others."""
    return service.feeds_summary(store, organization_id=principal.organization_id)


@router.get("/sites/{id}", response_model=SiteOut)
def get_site(site: ReadableSite) -> SiteOut:
    """One site of the caller's organisation."""
    return service.site_out(site)


@router.put("/sites/{id}", response_model=SiteOut)
def update_site(
    body: SiteUpdate, site: WritableSite, store: ConfigStoreDep, principal: CurrentUser
) -> SiteOut:
    """Partial update. Changing the domain clears verification."""
    return service.update(store, site=site, user_id=principal.user_id, body=body)


@router.delete("/sites/{id}", response_model=Ok)
def delete_site(site: WritableSite, store: ConfigStoreDep, principal: CurrentUser) -> Ok:
    """Delete the site (its API keys and settings with it)."""
    service.delete(store, site=site, user_id=principal.user_id)
    return Ok()


@router.get("/sites/{id}/stats", response_model=SiteStats)
def site_stats(site: ReadableSite, store: ConfigStoreDep) -> SiteStats:
    """Verification, API keys and tracking modules of the site, at a glance."""
    return service.stats(store, site=site)


@router.post("/sites/{id}/verify-domain", response_model=VerifyResult)
def verify_domain(site: WritableSite, store: ConfigStoreDep, settings: SettingsDep) -> VerifyResult:
    """Look for `aisle-verification=<token>` as a TXT record on `_aisle-verification.<domain>` (or the
    domain itself), then for the token in `https://<domain>/.well-known/aisle-verification.txt`."""
    return service.verify_domain(store, settings, site=site)


@router.get("/sites/{id}/tracking-config", response_model=TrackerConfig)
def get_tracking_config(site: ReadableSite) -> TrackerConfig:
    """The tracker configuration the site's storefront runs with."""
    return service.tracking_config(site)


@router.put(
    "/sites/{id}/tracking-config",
    response_model=TrackerConfig,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "Any subset of the tracker configuration; nested objects merge, maps replace.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TrackerConfig"}}},
        }
    },
)
def put_tracking_config(
    patch: Annotated[dict[str, Any], Body()],
    site: WritableSite,
    store: ConfigStoreDep,
    principal: CurrentUser,
) -> TrackerConfig:
    try:
        return service.update_tracking_config(store, site=site, user_id=principal.user_id, patch=patch)
    except ValidationError as exc:
        # Named from the body, as every other route's fields are: `body.dataLayerConfig.bufferSize`.
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors, body=patch) from None


@router.put("/admin/sites/{id}", response_model=SiteOut, tags=["admin"])
def admin_update_site(id: str, body: AdminSiteUpdate, store: ConfigStoreDep, admin: PlatformAdmin) -> SiteOut:
    """Platform administrators only: update any site, including `isVerified`."""
    site = service.get_for_admin(store, site_id=id)
    return service.update(store, site=site, user_id=admin.user_id, body=body)


@router.get("/sites/{siteId}/public-api-keys", response_model=list[ApiKeyOut], tags=["public-api-keys"])
def list_keys(site: ReadableSiteById, store: ConfigStoreDep) -> list[ApiKeyOut]:
    """The site's mobile runtime keys, revoked ones included; never their secrets."""
    return service.list_keys(store, site=site)


@router.post(
    "/sites/{siteId}/public-api-keys",
    status_code=201,
    response_model=ApiKeyWithSecret,
    tags=["public-api-keys"],
)
def create_key(body: ApiKeyCreate, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyWithSecret:
    """A mobile runtime key with `mobile_read` and/or `mobile_write`; the secret is in `key`, shown once."""
    return service.create_key(store, site=site, name=body.name, scopes=body.scopes)


_NO_SUCH_KEY: dict[int | str, dict[str, Any]] = {
    404: error_response("No such key on this site (API_KEY_NOT_FOUND).")
}


@router.post(
    "/sites/{siteId}/public-api-keys/{keyId}/rotate",
    response_model=ApiKeyWithSecret,
    tags=["public-api-keys"],
    responses={
        **_NO_SUCH_KEY,
        409: error_response("The key was revoked (API_KEY_REVOKED); create a new one."),
    },
)
def rotate_key(keyId: str, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyWithSecret:
    """New secret for the key (shown once); the old secret stops working at once."""
    return service.rotate_key(store, site=site, key_id=keyId)


@router.post(
    "/sites/{siteId}/public-api-keys/{keyId}/revoke",
    response_model=ApiKeyOut,
    tags=["public-api-keys"],
    responses=_NO_SUCH_KEY,
)
def revoke_key(keyId: str, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyOut:
    """Revoked keys never work again."""
    return service.revoke_key(store, site=site, key_id=keyId)
