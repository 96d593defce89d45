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
from api.sites import keys, service
from api.sites.schemas import (
    AdminSiteUpdate,
    ApiKeyCreate,
    ApiKeyOut,
    ApiKeyWithSecret,
    SiteCreate,
    SiteOut,
    SiteStats,
    SiteUpdate,
    VerifyResult,
)
from api.sites.tracking_config import TrackerConfig
from warehouse.config_store import api_keys

router = APIRouter(tags=["sites"])


@router.post("/sites", status_code=201, response_model=SiteOut, dependencies=[require(SITES_WRITE)])
def create_site(body: SiteCreate, store: ConfigStoreDep, principal: CurrentUser) -> SiteOut:
    """Create a site in the caller's organisation. It accepts public traffic once its domain is verified."""
    site = service.create(
        store, organization_id=principal.organization_id, user_id=principal.user_id, body=body
    )
    return service.site_out(site)


@router.get("/sites", response_model=list[SiteOut])
def list_sites(store: ConfigStoreDep, principal: CurrentUser) -> list[SiteOut]:
    return [
        service.site_out(s)
        for s in service.list_for_organization(store, organization_id=principal.organization_id)
    ]


@router.get("/sites/feeds-summary")
def feeds_summary(store: ConfigStoreDep, principal: CurrentUser) -> dict[str, Any]:
    """Which of the organisation's sites accept runtime traffic, and what blocks the others."""
    return service.feeds_summary(store, organization_id=principal.organization_id)


@router.get("/sites/{id}", response_model=SiteOut)
def get_site(site: ReadableSite) -> SiteOut:
    return service.site_out(site)


@router.put("/sites/{id}", response_model=SiteOut)
def update_site(
    body: SiteUpdate, site: WritableSite, store: ConfigStoreDep, principal: CurrentUser
) -> SiteOut:
    """Partial update. Changing the domain clears verification."""
    return service.site_out(service.update(store, site=site, user_id=principal.user_id, body=body))


@router.delete("/sites/{id}", response_model=Ok)
def delete_site(site: WritableSite, store: ConfigStoreDep, principal: CurrentUser) -> Ok:
    service.delete(store, site=site, user_id=principal.user_id)
    return Ok()


@router.get("/sites/{id}/stats", response_model=SiteStats)
def site_stats(site: ReadableSite, store: ConfigStoreDep) -> SiteStats:
    return service.stats(store, site=site)


@router.post("/sites/{id}/verify-domain", response_model=VerifyResult)
def verify_domain(site: WritableSite, store: ConfigStoreDep, settings: SettingsDep) -> VerifyResult:
    """Look for `aisle-verification=<token>` as a TXT record on `_aisle-verification.<domain>` (or the
    domain itself), then for the token in `https://<domain>/.well-known/aisle-verification.txt`."""
    site, checks = service.verify_domain(store, settings, site=site)
    passed = next((c for c in checks if c["ok"]), None)
    return VerifyResult(
        verified=bool(site["is_verified"]),
        method=passed["method"] if passed else None,
        checks=checks,
        site=service.site_out(site),
    )


@router.get("/sites/{id}/tracking-config", response_model=TrackerConfig)
def get_tracking_config(site: ReadableSite) -> TrackerConfig:
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
    return service.site_out(service.update(store, site=site, user_id=admin.user_id, body=body))


def _key_out(record: dict[str, Any], secret: str | None = None) -> ApiKeyOut:
    fields = {k: record[k] for k in ApiKeyOut.model_fields if k in record}
    fields["status"] = "revoked" if record["revoked_at"] else "active"
    return ApiKeyWithSecret(**fields, key=secret) if secret else ApiKeyOut(**fields)


@router.get("/sites/{siteId}/public-api-keys", response_model=list[ApiKeyOut], tags=["public-api-keys"])
def list_keys(site: ReadableSiteById, store: ConfigStoreDep) -> list[ApiKeyOut]:
    with store.connect() as conn:
        return [_key_out(r) for r in api_keys.list_for_site(conn, site_id=site["id"])]


@router.post(
    "/sites/{siteId}/public-api-keys",
    status_code=201,
    response_model=ApiKeyWithSecret,
    tags=["public-api-keys"],
)
def create_key(body: ApiKeyCreate, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyOut:
    """A mobile runtime key with `mobile_read` and/or `mobile_write`; the secret is in `key`, shown once."""
    record, secret = keys.create(store, site_id=site["id"], name=body.name, scopes=body.scopes)
    return _key_out(record, secret)


_NO_SUCH_KEY = {404: error_response("No such key on this site (API_KEY_NOT_FOUND).")}


@router.post(
    "/sites/{siteId}/public-api-keys/{keyId}/rotate",
    response_model=ApiKeyWithSecret,
    tags=["public-api-keys"],
    responses={
        **_NO_SUCH_KEY,
        409: error_response("The key was revoked (API_KEY_REVOKED); create a new one."),
    },
)
def rotate_key(keyId: str, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyOut:
    """New secret for the key (shown once); the old secret stops working at once."""
    record, secret = keys.rotate(store, site_id=site["id"], key_id=keyId)
    return _key_out(record, secret)


@router.post(
    "/sites/{siteId}/public-api-keys/{keyId}/revoke",
    response_model=ApiKeyOut,
    tags=["public-api-keys"],
    responses=_NO_SUCH_KEY,
)
def revoke_key(keyId: str, site: WritableSiteById, store: ConfigStoreDep) -> ApiKeyOut:
    """Revoked keys never work again."""
    return _key_out(keys.revoke(store, site_id=site["id"], key_id=keyId))
