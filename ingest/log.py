"""The durable log: append-only segment files of JSON lines, with group commit.

``append`` returns once the bytes are on disk (written and ``fdatasync``'ed). Concurrent appends
are gathered by one writer thread into a single write and a single sync, so many requests share
the cost of one disk flush. Readers (the flusher) only ever see whole, synced lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import orjson

from warehouse.lake import fsync_path

SEGMENT_SUFFIX = ".log"
CHECKPOINT = "checkpoint.json"


@dataclass(frozen=True, order=True)
class Position:
    segment: int
    offset: int


class LogClosed(RuntimeError):
    pass


def _segment_name(number: int) -> str:
    return f"{number:012d}{SEGMENT_SUFFIX}"


class LogFiles:
    """A log directory's segments and checkpoint, read by whoever flushes it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def durable_end(self) -> Position:
        raise NotImplementedError

    def segments(self) -> list[int]:
        return sorted(int(p.stem) for p in self.directory.glob(f"*{SEGMENT_SUFFIX}"))

    def read(
        self, start: Position, *, max_bytes: int = 64 * 1024 * 1024, until: Position | None = None
    ) -> tuple[bytes, Position]:
        """Synced whole lines from ``start`` (up to ``until`` when given); returns them and the
        position after them."""
        end = self.durable_end if until is None else min(self.durable_end, until)
        segment, offset = start.segment, start.offset
        while segment < end.segment:
            path = self.directory / _segment_name(segment)
            if path.exists() and offset < path.stat().st_size:
                break
            segment, offset = segment + 1, 0
        limit = (
            end.offset if segment == end.segment else (self.directory / _segment_name(segment)).stat().st_size
        )
        if offset >= limit:
            return b"", Position(segment, offset)
        with open(self.directory / _segment_name(segment), "rb") as handle:
            handle.seek(offset)
            data = handle.read(min(limit - offset, max_bytes))
        cut = data.rfind(b"\n") + 1
        return data[:cut], Position(segment, offset + cut)

    def checkpoint(self) -> Position:
        path = self.directory / CHECKPOINT
        if not path.exists():
            return Position(1, 0)
        mark = json.loads(path.read_text())
        return Position(mark["segment"], mark["offset"])

    def save_checkpoint(self, position: Position) -> None:
        path = self.directory / CHECKPOINT
        temp = path.with_suffix(".tmp")
        with open(temp, "w") as handle:
            handle.write(json.dumps({"segment": position.segment, "offset": position.offset}))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
        fsync_path(self.directory)
        for number in self.segments():
            if number < position.segment:
                (self.directory / _segment_name(number)).unlink(missing_ok=True)


class LogReader(LogFiles):
    """The log as a process other than its writer's sees it (the events flusher process): whatever
    the last segment holds, cut at its last newline. That may include lines written but not yet
    synced: their request is still waiting, and were the machine to fail before the sync, the client,
    never answered, re-sends them and finds them stored once (their ids are in the lake)."""

    @property
    def durable_end(self) -> Position:
        numbers = self.segments()
        if not numbers:
            return self.checkpoint()
        last = numbers[-1]
        return Position(last, (self.directory / _segment_name(last)).stat().st_size)


class DurableLog(LogFiles):
    def __init__(
        self, directory: Path, *, segment_bytes: int = 64 * 1024 * 1024, max_group: int = 4096
    ) -> None:
        super().__init__(directory)
        self.segment_bytes = segment_bytes
        self.max_group = max_group
        directory.mkdir(parents=True, exist_ok=True)
        self._recover()
        self._queue: queue.SimpleQueue[tuple[bytes, Future] | None] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name=f"log-{directory.name}", daemon=True)
        self._writer.start()

    # --- recovery -------------------------------------------------------------------------------

    def _recover(self) -> None:
        """Drop a torn tail: anything after the last complete, parseable line of the last segment."""
        numbers = self.segments() or [self.checkpoint().segment or 1]
        current = numbers[-1]
        path = self.directory / _segment_name(current)
        if path.exists():
            data = path.read_bytes()
            good = _last_good_end(data, start=self._scan_start(current))
            if good < len(data):
                with open(path, "r+b") as handle:
                    handle.truncate(good)
                    os.fsync(handle.fileno())
        self._open_segment(current)

    def _scan_start(self, segment: int) -> int:
        mark = self.checkpoint()
        return mark.offset if mark.segment == segment else 0

    def _open_segment(self, number: int) -> None:
        path = self.directory / _segment_name(number)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_path(self.directory)
        self._segment = number
        self._size = os.fstat(self._fd).st_size
        self._durable = Position(number, self._size)

    # --- writing --------------------------------------------------------------------------------

    def submit(self, payload: bytes) -> Future:
        """Queue complete JSON lines; the future resolves once they are durable."""
        if self._closed:
            raise LogClosed("the log is closed")
        future: Future = Future()
        self._queue.put((payload, future))
        return future

    async def append(self, payload: bytes) -> None:
        if self._closed:
            raise LogClosed("the log is closed")
        future = asyncio.get_running_loop().create_future()
        self._queue.put((payload, future))
        await future

    def append_sync(self, payload: bytes) -> None:
        self.submit(payload).result()

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = [item]
            while len(group) < self.max_group:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                group.append(more)
            self._commit(group)

    def _commit(self, group: list[tuple[bytes, Future | asyncio.Future]]) -> None:
        data = b"".join(payload for payload, _ in group)
        error: OSError | None = None
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
        except OSError as exc:
            error = exc
            # Take back what part of the group reached the file, so the next group starts a clean
            # line (another process reads the file's end, not this one's count).
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
        else:
            self._size += len(data)
            self._durable = Position(self._segment, self._size)
        _settle([waiter for _, waiter in group], error)
        if error is None and self._size >= self.segment_bytes:
            os.close(self._fd)
            self._open_segment(self._segment + 1)

    # --- reading --------------------------------------------------------------------------------

    @property
    def durable_end(self) -> Position:
        return self._durable

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join(timeout=30)
        os.close(self._fd)


def _settle(waiters: list, error: OSError | None) -> None:
    """Wake every waiter of a group: thread futures directly, event-loop futures with one callback
    per loop (one wake-up of the loop for the whole group, not one per request)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future]] = {}
    for waiter in waiters:
        if isinstance(waiter, asyncio.Future):
            by_loop.setdefault(waiter.get_loop(), []).append(waiter)
        elif error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)
    for loop, futures in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed; nobody waits any more
            loop.call_soon_threadsafe(_settle_on_loop, futures, error)


def _settle_on_loop(futures: list[asyncio.Future], error: OSError | None) -> None:
    for future in futures:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _last_good_end(data: bytes, *, start: int) -> int:
    """Offset after the last line (from ``start``) that is complete and parses as JSON."""
    good = start
    position = start
    while position < len(data):
        newline = data.find(b"\n", position)
        if newline < 0:
            break
        try:
            orjson.loads(data[position:newline])
        except orjson.JSONDecodeError:
            break
        position = newline + 1
        good = position
    return good
