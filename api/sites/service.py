"""Sites: lifecycle, ownership, tracking configuration, domain verification, API keys, summaries."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

from aisle.settings import Settings
from api.errors import BadRequest, Forbidden, NotFound
from api.sites import keys, verification
from api.sites.schemas import (
    AdminSiteUpdate,
    ApiKeyCounts,
    ApiKeyOut,
    ApiKeyWithSecret,
    FeedsSummary,
    SiteCreate,
    SiteFeed,
    SiteOut,
    SiteStats,
    SiteUpdate,
    TrackingSummary,
    Verification,
    VerificationCheck,
    VerifyResult,
)
from api.sites.tracking_config import TrackerConfig, apply_update, default_tracking_config
from warehouse.config_store import activity, api_keys, sites
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore, utcnow


def site_out(site: Site) -> SiteOut:
    token = site["verification_token"]
    row: dict[str, Any] = dict(site)
    return SiteOut(
        **{k: row[k] for k in SiteOut.model_fields if k in row},
        verification=Verification(
            token=token,
            dns_record_name=verification.dns_record_name(site["domain"]),
            dns_record_value=verification.expected_value(token),
            http_url=f"https://{site['domain']}{verification.WELL_KNOWN_PATH}",
        ),
    )


# --- ownership -------------------------------------------------------------------------------------


def canonical_site_id(site_id: str) -> str:
    """The stored spelling of a site id (lowercase, hyphenated), so `ABCD...` finds the site `abcd...`;
    anything that is not a UUID is a malformed request rather than a site the caller cannot see."""
    try:
        return str(uuid.UUID(site_id))
    except ValueError:
        raise BadRequest(f"Site id '{site_id[:64]}' is not a UUID", code="INVALID_SITE_ID") from None


def site_access_denied() -> Forbidden:
    """The answer for an unknown or a foreign site (also `aisle sql`'s for an unknown one)."""
    return Forbidden("You do not have access to this site", code="SITE_ACCESS_DENIED")


def get_owned(store: ConfigStore, *, organization_id: str, site_id: str) -> Site:
    """The site, if ``organization_id`` owns it. Unknown and foreign sites both answer 403, so ids of
    other tenants cannot be probed. Site ids are UUIDs, read in any of their spellings."""
    with store.connect() as conn:
        site = sites.get(conn, site_id=canonical_site_id(site_id))
    if site is None or site["organization_id"] != organization_id:
        raise site_access_denied()
    return site


def get_for_admin(store: ConfigStore, *, site_id: str) -> Site:
    with store.connect() as conn:
        site = sites.get(conn, site_id=site_id)
    if site is None:
        raise NotFound("No such site", code="SITE_NOT_FOUND")
    return site


# --- lifecycle -------------------------------------------------------------------------------------


def create(store: ConfigStore, *, organization_id: str, user_id: str, body: SiteCreate) -> SiteOut:
    with store.begin() as conn:
        site = sites.create(
            conn,
            organization_id=organization_id,
            name=body.name,
            domain=body.domain,
            currency=body.currency,
            timezone=body.timezone,
            tracking_config=default_tracking_config(),
        )
        activity.record(
            conn, organization_id=organization_id, site_id=site["id"], user_id=user_id, action="site.created"
        )
    return site_out(site)


def list_for_organization(store: ConfigStore, *, organization_id: str) -> list[SiteOut]:
    with store.connect() as conn:
        return [site_out(site) for site in sites.list_for_organization(conn, organization_id=organization_id)]


def update(store: ConfigStore, *, site: Site, user_id: str, body: SiteUpdate) -> SiteOut:
    """Partial update; a new domain clears verification (ownership was proven for the old one only),
    unless an administrator's update sets it."""
    values = body.model_dump(exclude_unset=True, exclude_none=True)
    if isinstance(body, AdminSiteUpdate) and "is_verified" in values:
        values["verified_at"] = utcnow() if values["is_verified"] else None
    if "domain" in values and values["domain"] != site["domain"] and not values.get("is_verified"):
        values.update(is_verified=False, verified_at=None)
    with store.begin() as conn:
        updated = sites.update_fields(conn, site_id=site["id"], **values)
        details = {k: v for k, v in values.items() if k != "verified_at"}
        activity.record_on_site(conn, site, "site.updated", user_id=user_id, details=details)
    return site_out(_present(updated))


def delete(store: ConfigStore, *, site: Site, user_id: str) -> None:
    with store.begin() as conn:
        sites.delete_one(conn, site_id=site["id"])
        activity.record_on_site(conn, site, "site.deleted", user_id=user_id)


def _present(site: Site | None) -> Site:
    """A site read back inside the transaction that changed it (a concurrent delete: 404)."""
    if site is None:
        raise NotFound("No such site", code="SITE_NOT_FOUND")
    return site


# --- tracking configuration ------------------------------------------------------------------------


def tracking_config(site: Site) -> TrackerConfig:
    return TrackerConfig.model_validate(site["tracking_config"] or {})


def update_tracking_config(
    store: ConfigStore, *, site: Site, user_id: str, patch: dict[str, Any]
) -> TrackerConfig:
    """Merge ``patch`` into the stored configuration; raises pydantic's ValidationError for a result
    that is not a valid configuration, nothing stored."""
    config = apply_update(site["tracking_config"] or {}, patch)
    with store.begin() as conn:
        sites.update_fields(conn, site_id=site["id"], tracking_config=config.model_dump(by_alias=True))
        activity.record_on_site(conn, site, "site.tracking_config_updated", user_id=user_id)
    return config


# --- domain verification ---------------------------------------------------------------------------


def verify_domain(store: ConfigStore, settings: Settings, *, site: Site) -> VerifyResult:
    if site["is_verified"]:
        checks = [VerificationCheck(method=None, ok=True, detail="already verified")]
        return VerifyResult(verified=True, method=None, checks=checks, site=site_out(site))
    checks = [
        VerificationCheck.model_validate(check)
        for check in verification.verify(settings, domain=site["domain"], token=site["verification_token"])
    ]
    passed = next((check for check in checks if check.ok), None)
    if passed is not None:
        with store.begin() as conn:
            verified = sites.update_fields(conn, site_id=site["id"], is_verified=True, verified_at=utcnow())
            activity.record_on_site(conn, site, "site.domain_verified")
        site = _present(verified)
    return VerifyResult(
        verified=bool(site["is_verified"]),
        method=passed.method if passed else None,
        checks=checks,
        site=site_out(site),
    )


# --- summaries -------------------------------------------------------------------------------------


def stats(store: ConfigStore, *, site: Site) -> SiteStats:
    with store.connect() as conn:
        keys = api_keys.list_for_site(conn, site_id=site["id"])
    config = tracking_config(site)
    return SiteStats(
        site_id=site["id"],
        is_verified=bool(site["is_verified"]),
        currency=site["currency"],
        timezone=site["timezone"],
        api_keys=ApiKeyCounts(
            active=sum(1 for k in keys if k["revoked_at"] is None),
            revoked=sum(1 for k in keys if k["revoked_at"] is not None),
        ),
        tracking=TrackingSummary(
            data_layer_enabled=config.data_layer_config.enabled,
            modules_enabled=sorted(
                name for name, module in config.data_layer_config.tracking_modules if module.enabled
            ),
        ),
        # Through the model, so the timestamp is written like every other one (`...Z`).
        created_at=site["created_at"],
    )


def feeds_summary(store: ConfigStore, *, organization_id: str) -> FeedsSummary:
    """Per site: whether its runtime feed (public API) is open and what still blocks it."""
    with store.connect() as conn:
        rows = sites.list_for_organization(conn, organization_id=organization_id)
    feeds = []
    for site in rows:
        blockers: list[Literal["DOMAIN_NOT_VERIFIED"]] = (
            [] if site["is_verified"] else ["DOMAIN_NOT_VERIFIED"]
        )
        feeds.append(
            SiteFeed(
                site_id=site["id"],
                name=site["name"],
                domain=site["domain"],
                site_key=site["site_key"],
                currency=site["currency"],
                is_verified=bool(site["is_verified"]),
                accepts_events=not blockers,
                blockers=blockers,
            )
        )
    return FeedsSummary(
        total_sites=len(feeds), verified_sites=sum(1 for feed in feeds if feed.is_verified), sites=feeds
    )


# --- public API keys -------------------------------------------------------------------------------


def _key_out(record: dict[str, Any]) -> dict[str, Any]:
    fields = {k: record[k] for k in ApiKeyOut.model_fields if k in record}
    fields["status"] = "revoked" if record["revoked_at"] else "active"
    return fields


def list_keys(store: ConfigStore, *, site: Site) -> list[ApiKeyOut]:
    with store.connect() as conn:
        return [ApiKeyOut(**_key_out(r)) for r in api_keys.list_for_site(conn, site_id=site["id"])]


def create_key(store: ConfigStore, *, site: Site, name: str, scopes: Sequence[str]) -> ApiKeyWithSecret:
    record, secret = keys.create(store, site_id=site["id"], name=name, scopes=list(scopes))
    return ApiKeyWithSecret(**_key_out(record), key=secret)


def rotate_key(store: ConfigStore, *, site: Site, key_id: str) -> ApiKeyWithSecret:
    record, secret = keys.rotate(store, site_id=site["id"], key_id=key_id)
    return ApiKeyWithSecret(**_key_out(record), key=secret)


def revoke_key(store: ConfigStore, *, site: Site, key_id: str) -> ApiKeyOut:
    return ApiKeyOut(**_key_out(keys.revoke(store, site_id=site["id"], key_id=key_id)))
