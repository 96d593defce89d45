"""The public area's work: a storefront's consent decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from api.errors import BadRequest, ServiceUnavailable
from api.tracking.service import context
from ingest.consent import ConsentResult
from ingest.service import Ingest
from ingest.validation import Rejected

if TYPE_CHECKING:
    from api.public.guard import PublicCaller


async def record_consent(ingest: Ingest, *, caller: PublicCaller, raw: Any) -> ConsentResult:
    """Validate one consent record and append it durably; `duplicate` when its `consentId` was
    already received (stored once)."""
    try:
        row, duplicate = await ingest.accept_consent(raw, context(caller, sent_at=None))
    except Rejected as exc:
        raise BadRequest(exc.reason, code=exc.code) from exc
    except OSError as exc:
        # Nothing was acknowledged, so nothing is lost: the client retries.
        raise ServiceUnavailable(
            "Could not store the consent durably; retry shortly", code="STORAGE_UNAVAILABLE"
        ) from exc
    return ConsentResult(consent_id=row["consent_id"], duplicate=duplicate)
