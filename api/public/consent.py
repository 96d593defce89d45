"""The public consent route: a storefront records a visitor's consent decision."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request, Response

from api.deps import ClientAddress, HotStateDep, SettingsDep
from api.errors import BadRequest, ServiceUnavailable
from api.ingest_body import read_json
from api.openapi_bodies import documented_body
from api.public.guard import PUBLIC_RESPONSES, PublicSite
from api.throttle import Limit, headers_on_errors, throttle
from ingest.consent import CATEGORIES, ConsentIn, ConsentResult
from ingest.validation import Context, Rejected

router = APIRouter(
    prefix="/public/sites/{siteKey}",
    tags=["public ingestion"],
    responses=PUBLIC_RESPONSES,
)


@router.post(
    "/consent",
    status_code=201,
    response_model=ConsentResult,
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
async def record_consent(
    request: Request,
    caller: PublicSite,
    hot: HotStateDep,
    settings: SettingsDep,
    address: ClientAddress,
    response: Response,
) -> ConsentResult:
    """Record a visitor's consent state (the web and mobile libraries' `grantConsent`/`revokeConsent`
    sync here). Under the public guard; throttled per visitor like the events batch (`X-RateLimit-*`,
    429 with `Retry-After`). 201 means the record is durable (written and fsync'ed to the log) and
    reaches the `consents` lake table exactly once; a re-sent `consentId` answers 200 with
    `duplicate: true`. `timestamp` may lie up to 7 days back (server time when absent; `sentAt` corrects
    client clock skew). `userId`, when given, makes the record count for that user in analytics."""
    raw = await read_json(request)
    visitor = raw.get("visitorId") if isinstance(raw, dict) else None
    subject = visitor if isinstance(visitor, str) and visitor else address
    headers = throttle(
        hot,
        response,
        limit=Limit("consent-visitor", settings.visitor_batches_per_minute, 60),
        subject=f"{caller.site['id']}:{subject}",
    )
    ctx = Context(
        site_id=caller.site["id"],
        site_currency=caller.site["currency"],
        received_at=datetime.now(UTC),
        channel=caller.channel,
        client_platform=caller.client_platform,
        client_version=caller.client_version,
    )
    with headers_on_errors(headers):
        try:
            row, duplicate = await request.app.state.ingest.accept_consent(raw, ctx)
        except Rejected as exc:
            raise BadRequest(exc.reason, code=exc.code) from exc
        except OSError as exc:
            # Nothing was acknowledged, so nothing is lost: the client retries.
            raise ServiceUnavailable(
                "Could not store the consent durably; retry shortly", code="STORAGE_UNAVAILABLE"
            ) from exc
    if duplicate:
        response.status_code = 200
    return ConsentResult(consent_id=row["consent_id"], duplicate=duplicate)
