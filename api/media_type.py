"""JSON bodies come as JSON: a route whose body FastAPI parses as JSON refuses other content types."""

from __future__ import annotations

from fastapi import Request, params

from api.errors import UnsupportedMediaType, malformed_json
from ingest import json_text

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def is_json(content_type: str) -> bool:
    """``application/json`` or any ``application/*+json``, with any parameters (charset): what FastAPI
    parses as JSON."""
    main, _, sub = content_type.split(";", 1)[0].strip().lower().partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


async def json_bodies_only(request: Request) -> None:
    """App-wide dependency: 415 when a route taking a JSON body is sent a body under another content
    type, or with none. FastAPI would pass such a body on unparsed, and its validation would answer a
    misleading 400 "Input should be a valid dictionary". A JSON body with NaN or Infinity is 400
    MALFORMED_JSON, as ingestion answers it. Routes that read their bodies themselves (ingestion,
    product feeds) take no body parameter and keep their own rules; a request without a body is left
    to FastAPI as before."""
    if request.method not in BODY_METHODS:
        return
    body_field = getattr(request.scope.get("route"), "body_field", None)
    if body_field is None or isinstance(body_field.field_info, params.Form):
        return
    body = await request.body()
    if not body:
        return
    content_type = request.headers.get("content-type")
    if content_type is None or not is_json(content_type):
        sent = (
            " (none was sent)" if content_type is None else f", not '{content_type.split(';', 1)[0].strip()}'"
        )
        raise UnsupportedMediaType(
            f"This route reads a JSON body: send it with Content-Type: application/json{sent}"
        )
    if b"NaN" in body or b"Infinity" in body:
        # Python's json module, which FastAPI parses with, reads these non-JSON words as floats.
        try:
            json_text.loads(body)
        except json_text.NotJson as exc:
            raise malformed_json(str(exc)) from None
