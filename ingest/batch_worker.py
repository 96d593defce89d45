"""Event batches normalised in worker processes: the events route's heavy middle on the other cores.

The event loop's thread is the events route's limit, and decoding and validating the body, building
the lake columns and encoding the log line are a large part of its work on a batch (the figures are in
docs/decisions.md). A worker process does that part, which frees the event loop for what needs the
server's own state: the guard, the throttle, the claims on event ids, the durable log. A body
the fast path does not take whole (a bad event, malformed JSON: ``parse_event_batch`` says None)
goes the in-process way, which reports each problem; so does every body while no worker answers.

    python -m ingest.batch_worker FD

FD is the worker's end of a socket pair; the worker exits when the server's end closes (the server
stopped or was killed). One frame each way per body, answered in order:

- request: ``!II`` (length of the context JSON, length of the body), the context JSON, the body;
- answer: ``!I`` length, then ``-`` when the body needs the in-process path, or the prepared batch
  as JSON (the visitors the events name, the kept events' ids, the rejections by index), a newline,
  and the log line (empty when no event is kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
from collections import deque
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import orjson
import structlog

from aisle.gc_tuning import tune_for_serving
from ingest.event_lines import encode_event_batch
from ingest.events import batch_visitors, parse_event_batch, valid_event_log_columns
from ingest.validation import Context, Rejected, common_columns

log = structlog.get_logger("aisle.batch_worker")

REQUEST = struct.Struct("!II")
ANSWER = struct.Struct("!I")
NOT_TAKEN = b"-"
READY = b"ready"  # a worker's first frame, once it has imported what it needs
# A worker imports for about a second; one that is not ready after this is broken.
READY_TIMEOUT_SECONDS = 60.0
# A body is at most a few MiB; a worker that takes longer than this is stuck, not busy.
ANSWER_TIMEOUT_SECONDS = 10.0
RESPAWN_DELAY_SECONDS = 1.0


@dataclass
class PreparedBatch:
    """A batch a worker validated, normalised and encoded as one log line."""

    visitors: list[str]
    event_ids: list[str]
    failures: list[tuple[int, Rejected]]
    line: bytes


# --- the worker's side ---------------------------------------------------------------------------


def prepare(context: dict[str, Any], body: bytes) -> bytes:
    """The answer for one body: the prepared batch, or NOT_TAKEN."""
    batch = parse_event_batch(body)
    if batch is None:
        return NOT_TAKEN
    ctx = Context(
        **{**context, "received_at": datetime.fromisoformat(context["received_at"]), "sent_at": batch.sent_at}
    )
    columns, failures = valid_event_log_columns(batch.events, ctx)
    event_ids = columns["event_id"]
    head = {
        "visitors": batch_visitors(event.visitor_id for event in batch.events),
        "ids": event_ids,
        "failures": [[index, exc.code, exc.reason] for index, exc in failures],
    }
    line = encode_event_batch(common_columns(ctx), columns) if event_ids else b""
    return orjson.dumps(head) + b"\n" + line


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def serve(sock: socket.socket) -> None:
    tune_for_serving()
    try:
        _serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        return  # the server closed its end while an answer was on the way


def _serve(sock: socket.socket) -> None:
    sock.sendall(ANSWER.pack(len(READY)) + READY)
    stream = sock.makefile("rb", buffering=1 << 16)
    while True:
        head = _read_exactly(stream, REQUEST.size)
        if head is None:
            return  # the server closed its end
        context_size, body_size = REQUEST.unpack(head)
        context = _read_exactly(stream, context_size)
        body = _read_exactly(stream, body_size)
        if context is None or body is None:
            return
        try:
            answer = prepare(orjson.loads(context), body)
        except Exception:  # the in-process path decides, and reports, whatever broke here
            log.exception("batch_worker_failed")
            answer = NOT_TAKEN
        sock.sendall(ANSWER.pack(len(answer)) + answer)


# --- the server's side ---------------------------------------------------------------------------


class WorkerGone(ConnectionError):
    pass


class _Connection(asyncio.Protocol):
    """The server's end of one worker's socket: bodies out, answers back in the same order."""

    def __init__(self, on_lost) -> None:
        self._on_lost = on_lost
        self._buffer = bytearray()
        self._waiting: deque[asyncio.Future] = deque()
        self.transport: asyncio.Transport | None = None
        self.ready = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= ANSWER.size:
            (size,) = ANSWER.unpack_from(buffer)
            end = ANSWER.size + size
            if len(buffer) < end:
                return
            answer = bytes(buffer[ANSWER.size : end])
            del buffer[:end]
            if not self.ready.done():
                self.ready.set_result(answer == READY)
                continue
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.ready.done():
            self.ready.set_result(False)
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_exception(WorkerGone("the batch worker went away"))
        self._on_lost(self)

    @property
    def open(self) -> bool:
        """Ready for bodies: a body sent to a worker still importing would wait for it."""
        ready = self.ready.done() and self.ready.result()
        return ready and self.transport is not None and not self.transport.is_closing()

    def ask(self, context: bytes, body: bytes) -> asyncio.Future:
        if self.transport is None:  # asked only while open, but it may have closed since
            raise WorkerGone("the batch worker went away")
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self.transport.write(REQUEST.pack(len(context), len(body)) + context + body)
        return waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Close without waiting for unsent bodies (a stuck worker may never read them)."""
        if self.transport is not None:
            self.transport.abort()


def _answer(raw: bytes) -> PreparedBatch | None:
    if raw == NOT_TAKEN:
        return None
    head, line = raw.split(b"\n", 1)
    fields = orjson.loads(head)
    return PreparedBatch(
        visitors=fields["visitors"],
        event_ids=fields["ids"],
        failures=[(index, Rejected(code, reason)) for index, code, reason in fields["failures"]],
        line=line,
    )


class BatchWorkers:
    """``count`` worker processes, asked in turn; one that dies is replaced a second later."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._connections: list[_Connection] = []
        self._processes: dict[_Connection, subprocess.Popen] = {}
        self._turn = 0
        self._stopping = False
        self.prepared = 0  # bodies a worker prepared
        self.left = 0  # bodies left to the server's own path (a worker said so, or none answered)

    async def start(self) -> None:
        """Start the workers and wait until they are ready (the server answers once this returns)."""
        await asyncio.gather(*(self._spawn() for _ in range(self.count)))

    async def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            # A fresh interpreter, not a fork: a child must not inherit the server's locks and
            # descriptors (the data directory's lock would outlive a killed server).
            process = subprocess.Popen(
                [sys.executable, "-m", "ingest.batch_worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
            )
        _, connection = await asyncio.get_running_loop().create_connection(
            lambda: _Connection(self._lost), sock=ours
        )
        self._connections.append(connection)
        self._processes[connection] = process
        try:
            await asyncio.wait_for(asyncio.shield(connection.ready), READY_TIMEOUT_SECONDS)
        except TimeoutError:
            log.error("batch_worker_not_ready", timeout_seconds=READY_TIMEOUT_SECONDS)
            connection.abort()

    def _lost(self, connection: _Connection) -> None:
        if connection in self._connections:
            self._connections.remove(connection)
        process = self._processes.pop(connection, None)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()
        if not self._stopping:
            log.warning("batch_worker_lost", respawn_in_seconds=RESPAWN_DELAY_SECONDS)
            asyncio.get_running_loop().call_later(
                RESPAWN_DELAY_SECONDS, lambda: asyncio.ensure_future(self._respawn())
            )

    async def _respawn(self) -> None:
        if not self._stopping and len(self._connections) < self.count:
            try:
                await self._spawn()
            except OSError:
                log.exception("batch_worker_spawn_failed")

    async def prepare(self, body: bytes, ctx: Context) -> PreparedBatch | None:
        """The batch as a worker prepared it; None when the in-process path must take it (the worker
        said so, or no worker answered: nothing was stored, so nothing is lost)."""
        batch = await self._ask(body, ctx)
        if batch is None:
            self.left += 1
        else:
            self.prepared += 1
        return batch

    async def _ask(self, body: bytes, ctx: Context) -> PreparedBatch | None:
        live = [c for c in self._connections if c.open]
        if not live:
            return None
        self._turn = (self._turn + 1) % len(live)
        connection = live[self._turn]
        # The request's context as it is (orjson writes its times as ISO 8601); the worker adds
        # the body's sentAt.
        context = orjson.dumps(asdict(ctx))
        try:
            raw = await asyncio.wait_for(connection.ask(context, body), ANSWER_TIMEOUT_SECONDS)
        except TimeoutError:
            log.error("batch_worker_stuck", timeout_seconds=ANSWER_TIMEOUT_SECONDS)
            connection.abort()  # its other bodies go the in-process way; a new worker follows
            return None
        except WorkerGone:
            return None
        return _answer(raw)

    async def stop(self) -> None:
        self._stopping = True
        for connection in list(self._connections):
            connection.close()  # the worker reads the end of its socket and exits
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        for process in list(self._processes.values()):
            # Waited for on the loop: the sockets close on its next turns.
            while process.poll() is None and loop.time() < deadline:
                await asyncio.sleep(0.01)
            if process.poll() is None:
                process.kill()
                process.wait()
        self._processes.clear()
        self._connections.clear()

    @property
    def ready(self) -> int:
        """Workers ready for bodies."""
        return sum(connection.open for connection in self._connections)

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes.values()]


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server, which closes our socket
    serve(socket.socket(fileno=int(sys.argv[1])))
    os._exit(0)
