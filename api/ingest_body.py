"""Reading ingestion bodies: size and content-type checks, then fast JSON parsing."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request

from api.errors import BadRequest, PayloadTooLarge
from ingest.schemas import MAX_BODY_BYTES

# navigator.sendBeacon posts strings as text/plain; the JSON inside is the same.
JSON_TYPES = ("application/json", "text/plain")


async def read_body(request: Request) -> bytes:
    """The raw body, once its content type and size are acceptable."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in JSON_TYPES:
        raise BadRequest(
            "Send the body as JSON with Content-Type: application/json", code="UNSUPPORTED_CONTENT_TYPE"
        )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"Bodies are limited to {MAX_BODY_BYTES} bytes", code="BODY_TOO_LARGE")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"Bodies are limited to {MAX_BODY_BYTES} bytes", code="BODY_TOO_LARGE")
    return body


def parse_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Body is not valid JSON: {exc}", code="MALFORMED_JSON") from exc


async def read_json(request: Request) -> Any:
    return parse_json(await read_body(request))
