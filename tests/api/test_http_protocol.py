"""Writes of one event-loop turn leave as one: a response's head and body in a single write."""

from __future__ import annotations

import asyncio
import socket

import httpx
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, StreamingResponse

from api.http_protocol import GatheredWrites, GatheringHttpToolsProtocol
from tests.servers import LiveServer


class Recorded:
    """A real transport, with the writes it was given listed."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.transport.write(data)

    def __getattr__(self, name: str):
        return getattr(self.transport, name)


async def _connected() -> tuple[Recorded, socket.socket, asyncio.AbstractServer]:
    """A loopback connection: the server side's transport, and the client's socket."""
    made: asyncio.Future = asyncio.get_running_loop().create_future()

    class Accept(asyncio.Protocol):
        def connection_made(self, transport):
            made.set_result(transport)

    server = await asyncio.get_running_loop().create_server(Accept, "127.0.0.1", 0)
    client = socket.create_connection(server.sockets[0].getsockname()[:2])
    client.settimeout(5)
    return Recorded(await made), client, server


def _read_all(client: socket.socket) -> bytes:
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    return data


def test_writes_of_one_turn_reach_the_transport_as_one():
    async def scenario():
        recorded, client, server = await _connected()
        gathered = GatheredWrites(recorded, asyncio.get_running_loop())
        gathered.write(b"HTTP/1.1 200 OK\r\n\r\n")
        gathered.write(b"body")
        assert recorded.writes == []  # nothing leaves before the turn ends
        await asyncio.sleep(0)
        assert recorded.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        gathered.write(b"next")
        await asyncio.sleep(0)
        assert recorded.writes[1:] == [b"next"]
        gathered.close()
        server.close()
        return client

    client = asyncio.run(scenario())
    assert _read_all(client) == b"HTTP/1.1 200 OK\r\n\r\nbodynext"


def test_a_close_sends_what_was_written_before_it():
    async def scenario():
        recorded, client, server = await _connected()
        gathered = GatheredWrites(recorded, asyncio.get_running_loop())
        gathered.write(b"last words")
        assert gathered.get_write_buffer_size() >= len(b"last words")
        gathered.close()
        await asyncio.sleep(0)  # the gathering callback finds nothing left to send
        server.close()
        return recorded, client

    recorded, client = asyncio.run(scenario())
    assert recorded.writes == [b"last words"]
    assert _read_all(client) == b"last words"


def test_writes_to_a_closed_connection_are_dropped_quietly():
    async def scenario():
        recorded, client, server = await _connected()
        gathered = GatheredWrites(recorded, asyncio.get_running_loop())
        recorded.transport.close()
        gathered.write(b"too late")
        await asyncio.sleep(0)
        server.close()
        client.close()
        return recorded

    assert asyncio.run(scenario()).writes == []


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/small")
    async def small() -> PlainTextResponse:
        return PlainTextResponse("small answer")

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def chunks():
            for n in range(200):
                yield f"line {n}\n".encode() * 100
                await asyncio.sleep(0)

        return StreamingResponse(chunks(), media_type="text/plain")

    return app


def test_the_server_answers_small_streamed_and_error_answers_over_one_connection():
    with LiveServer(_app()) as server, httpx.Client(base_url=server.url) as client:
        assert server.server.config.http_protocol_class is GatheringHttpToolsProtocol
        for _ in range(3):  # keep-alive: each answer is complete and the next one follows
            assert client.get("/small").text == "small answer"
            streamed = client.get("/stream")
            assert streamed.text == "".join(f"line {n}\n" * 100 for n in range(200))
            refused = client.post("/small")  # an error answer, then the connection goes on
            assert refused.status_code == 405


def test_pipelined_requests_get_their_answers_in_order():
    with LiveServer(_app()) as server, socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.settimeout(5)
        request = b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n"
        raw.sendall(request * 2 + b"GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = _read_all(raw)
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    assert answer.count(b"small answer") == 3
