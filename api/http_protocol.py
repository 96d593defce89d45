"""uvicorn's httptools protocol, with the writes of one event-loop turn sent as one.

uvicorn writes a response's head when the app sends ``http.response.start`` and its body when it
sends ``http.response.body``: two ``send`` system calls and two TCP segments for every small answer,
which on loopback cost the server's one busy thread about a tenth of a storefront batch's time
(bench/RESULTS.md). Writes made in the same turn of the loop are gathered and written together at
the end of that turn, so a head and its body leave in one call; nothing waits longer than the turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class GatheredWrites:
    """A transport whose writes within one loop turn reach the wrapped one as a single write."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._send)
        self._pending.append(data)

    def writelines(self, chunks) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _send(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._send()  # what was written before the close is still sent, as the transport would
        self._transport.close()

    def write_eof(self) -> None:
        self._send()
        self._transport.write_eof()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GatheringHttpToolsProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(GatheredWrites(transport, self.loop))  # type: ignore[arg-type]
