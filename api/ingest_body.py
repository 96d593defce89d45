"""Reading ingestion bodies: size and content-type checks, then fast JSON parsing."""

from __future__ import annotations

import zlib
from typing import Any

import orjson
from fastapi import Request

from api.errors import BadRequest, PayloadTooLarge
from ingest.schemas import MAX_BODY_BYTES

# navigator.sendBeacon posts strings as text/plain; the JSON inside is the same.
JSON_TYPES = ("application/json", "text/plain")
# Storefront libraries (PostHog's, Segment's) may gzip their batches.
CONTENT_ENCODINGS = ("identity", "gzip")


def _too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"Bodies are limited to {MAX_BODY_BYTES} bytes", code="BODY_TOO_LARGE")


def _gunzip(body: bytes) -> bytes:
    """A gzip body, inflated; the size limit holds for what it inflates to (no zip bombs)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        inflated = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as exc:
        raise BadRequest(f"Body is not valid gzip: {exc}", code="MALFORMED_BODY") from exc
    if len(inflated) > MAX_BODY_BYTES or inflater.unconsumed_tail:
        raise _too_large()
    if not inflater.eof:
        raise BadRequest("Body is not valid gzip: it ends early", code="MALFORMED_BODY")
    if inflater.unused_data:
        # A second gzip member, or bytes after the stream: what they hold would be dropped unread.
        raise BadRequest("Body holds more after its gzip stream; send one gzip stream", code="MALFORMED_BODY")
    return inflated


async def read_body(request: Request) -> bytes:
    """The raw body (inflated when sent with Content-Encoding: gzip), once its content type and
    size are acceptable."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in JSON_TYPES:
        raise BadRequest(
            "Send the body as JSON with Content-Type: application/json (or text/plain, as "
            "navigator.sendBeacon does)",
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


UTF8_BOM = b"\xef\xbb\xbf"


def parse_json(body: bytes) -> Any:
    try:
        # Some HTTP clients and editors put a byte-order mark before UTF-8 text; JSON has no use for it.
        return orjson.loads(body.removeprefix(UTF8_BOM))
    except orjson.JSONDecodeError as exc:
        if "UTF-8" in str(exc):  # orjson words it as a str's problem ("surrogates not allowed")
            raise BadRequest("Body is not valid JSON: it is not UTF-8 text", code="MALFORMED_JSON") from exc
        raise BadRequest(f"Body is not valid JSON: {exc}", code="MALFORMED_JSON") from exc


async def read_json(request: Request) -> Any:
    return parse_json(await read_body(request))
