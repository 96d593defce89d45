"""Bodies and answers of the ingestion routes beyond ingest's own (``ingest.schemas``, ``ingest.consent``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas import CamelModel
from ingest.schemas import MAX_ID_LENGTH, EventIn, IdentityId, SiteIdText


class IdentifyIn(CamelModel):
    # Not a StrictCamelModel: fields it does not know are left out, as an event's are (Segment's
    # identify also sends anonymousId, timestamp and context), and ids are kept as sent, as an
    # event's are (a link is to the very visitor id its events carry).

    visitor_id: IdentityId
    user_id: IdentityId
    event_id: str | None = Field(
        default=None,
        max_length=MAX_ID_LENGTH,
        description="Client-made id of the identify event; a retry with the same id within 24 h is stored once.",
    )
    session_id: IdentityId | None = Field(
        default=None,
        description="The visitor's current session; without it the identify event is in a session of the "
        "visitor's own (`identify:<visitorId>`), never one shared with other visitors.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="What the SDK's `identify(userId, metadata?)` passes; kept as the identify event's "
        "metadata.",
    )
    traits: dict[str, Any] = Field(
        default_factory=dict, description="Segment's name for the user's traits; kept as `metadata.traits`."
    )


class IdentifyOut(CamelModel):
    success: bool
    merged: bool


class TrackOneDoc(EventIn):
    # The flat form of `POST /analytics/track`'s body, for the schema only: the route reads its body.
    site_id: SiteIdText
