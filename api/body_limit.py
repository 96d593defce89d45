"""One size limit on request bodies, for every route that does not read its body under a limit of its own.

FastAPI reads a JSON body whole before validating it, so without a limit an anonymous caller could make
any route with a body (``POST /auth/register`` among them) hold hundreds of megabytes. The ingestion
routes read their bodies themselves with limits of their own (``api.tracking.body``); the storefront's
events batch does not even pass through the middleware stack (``api.hot_path``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fastapi.responses import JSONResponse
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import BodyTooLarge, error_body


def _declared_body(scope: Scope) -> tuple[int | None, bool]:
    """The Content-Length (None when absent or unreadable) and whether the body is chunked."""
    length, chunked = None, False
    for name, value in scope["headers"]:
        if name == b"content-length":
            length = int(value) if value.isdigit() else None
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    return length, chunked


class BodyLimit:
    """ASGI middleware: a request body larger than ``max_bytes`` answers 413 ``BODY_TOO_LARGE`` in the
    error envelope. A declared Content-Length is judged before a byte is read; a chunked body is counted
    as it arrives and refused the moment it passes the limit, so no route ever holds more than
    ``max_bytes`` of it. Paths matching one of the ``exempt`` route templates pass untouched."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, exempt: Iterable[str]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt: list[re.Pattern[str]] = [compile_path(template)[0] for template in exempt]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, chunked = _declared_body(scope)
        if (not length and not chunked) or any(p.match(scope["path"]) for p in self.exempt):
            await self.app(scope, receive, send)
            return
        if length is not None and length > self.max_bytes:
            too_large = BodyTooLarge(self.max_bytes)
            answer = JSONResponse(error_body(too_large.code, too_large.detail), status_code=413)
            await answer(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Raised into whatever is reading: FastAPI passes HTTPExceptions on from its body
                    # parsing, and the app's handler answers it in the envelope.
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted, send)
