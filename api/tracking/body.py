"""Reading ingestion bodies: size and content-type checks, then fast JSON parsing."""

from __future__ import annotations

import zlib
from typing import Any

from fastapi import Request

from api.errors import BadRequest, PayloadTooLarge, malformed_json
from api.media_type import is_json
from ingest import json_text
from ingest.schemas import MAX_BODY_BYTES

# navigator.sendBeacon posts strings as text/plain; the JSON inside is the same.
JSON_TYPES = ("application/json", "text/plain")
# Storefront libraries (PostHog's, Segment's) may gzip their batches.
CONTENT_ENCODINGS = ("identity", "gzip")


def _too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"Bodies are limited to {MAX_BODY_BYTES} bytes", code="BODY_TOO_LARGE")


def _gunzip(body: bytes) -> bytes:
    """A gzip body, inflated; the size limit holds for what it inflates to (no zip bombs). Every
    member is read, as gzip(1) reads them (a client may compress its body in pieces); bytes after
    the last member that are not one are refused, never dropped unread."""
    inflated, rest = b"", body
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            inflated += inflater.decompress(rest, MAX_BODY_BYTES + 1 - len(inflated))
        except zlib.error as exc:
            after = " after its first gzip member" if inflated else ""
            raise BadRequest(f"Body is not valid gzip{after}: {exc}", code="MALFORMED_BODY") from exc
        if len(inflated) > MAX_BODY_BYTES or inflater.unconsumed_tail:
            raise _too_large()
        if not inflater.eof:
            raise BadRequest("Body is not valid gzip: it ends early", code="MALFORMED_BODY")
        rest = inflater.unused_data
        if not rest:
            return inflated


async def read_body(request: Request) -> bytes:
    """The raw body (inflated when sent with Content-Encoding: gzip), once its content type and
    size are acceptable."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in JSON_TYPES and not is_json(content_type):
        raise BadRequest(
            "Send the body as JSON with Content-Type: application/json (any application/*+json, or "
            "text/plain as navigator.sendBeacon does)",
            code="UNSUPPORTED_CONTENT_TYPE",
        )
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in CONTENT_ENCODINGS:
        raise BadRequest(
            f"Content-Encoding {encoding!r} is not supported; send the body as is or with gzip",
            code="UNSUPPORTED_CONTENT_ENCODING",
        )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _too_large()
    return _gunzip(body) if encoding == "gzip" else body


def parse_json(body: bytes) -> Any:
    try:
        return json_text.loads(body)
    except json_text.NotJson as exc:
        raise malformed_json(str(exc)) from exc


async def read_json(request: Request) -> Any:
    return parse_json(await read_body(request))
