"""Public runtime routes (siteKey + public guard): the tracker configuration and consent records.

The storefront's ingestion routes (events, orders, metrics, identify) are the tracking area's
(``api.tracking.routes``), beside the private tracking routes that share their work.
"""

from __future__ import annotations

from fastapi import APIRouter

from api.openapi_bodies import documented_body
from api.public import service
from api.public.guard import PUBLIC_RESPONSES, PublicCallDep
from api.sites.service import tracking_config
from api.sites.tracking_config import TrackerConfig
from api.throttle import headers_on_errors
from api.tracking.body import read_json
from ingest.consent import CATEGORIES, ConsentIn, ConsentResult

router = APIRouter(prefix="/public/sites/{siteKey}", responses=PUBLIC_RESPONSES)

# The consent route reads its body itself, under ingestion's limits (``api.tracking.body``).
CONSENT_PATH = "/consent"


@router.get("/tracking-config", response_model=TrackerConfig, tags=["public"])
def public_tracking_config(call: PublicCallDep) -> TrackerConfig:
    """The tracker configuration (fallback source of the runtime config). Throttled per client address."""
    call.throttle("public-read", call.settings.public_read_limit_per_minute, call.address)
    return tracking_config(call.caller.site)


@router.post(
    CONSENT_PATH,
    status_code=201,
    response_model=ConsentResult,
    tags=["public ingestion"],
    responses={
        200: {"model": ConsentResult, "description": "The `consentId` was already stored; stored once."},
        400: {
            "description": "Codes: UNKNOWN_CONSENT_CATEGORY (a key outside "
            + ", ".join(CATEGORIES)
            + "), CONSENT_CATEGORIES_EMPTY, INVALID_CONSENT (a field's type or length, a non-boolean "
            "category, an unknown field), CONSENT_NOT_OBJECT, TIMESTAMP_INVALID, TIMESTAMP_TOO_OLD, "
            "TIMESTAMP_IN_FUTURE, MALFORMED_JSON, UNSUPPORTED_CONTENT_TYPE."
        },
    },
    openapi_extra=documented_body(
        ConsentIn,
        "One consent decision. `categories` states each category as true (granted) or false (refused); "
        "a category left out or null is not stated by this record, so a partial change can be synced "
        "alone. Analytics read, per person and category, the latest stated value.",
    ),
)
async def record_consent(call: PublicCallDep) -> ConsentResult:
    """Record a visitor's consent state (the web and mobile libraries' `grantConsent`/`revokeConsent`
    sync here). Under the public guard; throttled per visitor like the events batch (`X-RateLimit-*`,
    429 with `Retry-After`). 201 means the record is durable (written and fsync'ed to the log) and
    reaches the `consents` lake table exactly once; a re-sent `consentId` answers 200 with
    `duplicate: true`. `timestamp` may lie up to 7 days back (server time when absent; `sentAt` corrects
    client clock skew). `userId`, when given, makes the record count for that user in analytics."""
    raw = await read_json(call.request)
    visitor = raw.get("visitorId") if isinstance(raw, dict) else None
    subject = visitor if isinstance(visitor, str) and visitor else call.address
    headers = call.throttle("consent-visitor", call.settings.visitor_batches_per_minute, subject)
    with headers_on_errors(headers):
        result = await service.record_consent(call.ingest, caller=call.caller, raw=raw)
    if result.duplicate:
        call.response.status_code = 200
    return result
