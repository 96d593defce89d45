"""The durable log: append-only segment files of JSON lines, with group commit.

``append`` returns once the bytes are on disk (written and ``fdatasync``'ed). Concurrent appends
are gathered by one writer thread into a single write and a single sync, so many requests share
the cost of one disk flush. Readers (the flusher) only ever see whole, synced lines.

An append may carry a *memo*: the same data as Python objects. Once its line is durable the memo
is kept, with the line's position, for the flusher, which then need not parse back what this
process has just written. Memos are only a shortcut: the log's bytes stay the truth, and a line
without its memo (dropped under memory pressure, or written by an earlier process) is read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from warehouse.lake import fsync_path

SEGMENT_SUFFIX = ".log"
CHECKPOINT = "checkpoint.json"


@dataclass(frozen=True, order=True)
class Position:
    segment: int
    offset: int


@dataclass(frozen=True)
class Memo:
    """What a durable line holds, as the appender built it, and where the line lies in the log."""

    start: Position
    end: Position
    value: Any


class LogClosed(RuntimeError):
    pass


def _segment_name(number: int) -> str:
    return f"{number:012d}{SEGMENT_SUFFIX}"


class DurableLog:
    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = 64 * 1024 * 1024,
        max_group: int = 4096,
        max_memos: int = 20_000,
    ) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.max_group = max_group
        # Memos of durable lines, oldest first (appended by the writer thread, taken by the flusher).
        self.memos: deque[Memo] = deque()
        self.max_memos = max_memos
        directory.mkdir(parents=True, exist_ok=True)
        self._recover()
        self._queue: queue.SimpleQueue[tuple[bytes, Future, Any] | None] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name=f"log-{directory.name}", daemon=True)
        self._writer.start()

    # --- recovery -------------------------------------------------------------------------------

    def segments(self) -> list[int]:
        return sorted(int(p.stem) for p in self.directory.glob(f"*{SEGMENT_SUFFIX}"))

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

    def submit(self, payload: bytes, memo: Any = None) -> Future:
        """Queue complete JSON lines; the future resolves once they are durable."""
        if self._closed:
            raise LogClosed("the log is closed")
        future: Future = Future()
        self._queue.put((payload, future, memo))
        return future

    async def append(self, payload: bytes, memo: Any = None) -> None:
        if self._closed:
            raise LogClosed("the log is closed")
        future = asyncio.get_running_loop().create_future()
        self._queue.put((payload, future, memo))
        await future

    def append_sync(self, payload: bytes, memo: Any = None) -> None:
        self.submit(payload, memo).result()

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

    def _commit(self, group: list[tuple[bytes, Future | asyncio.Future, Any]]) -> None:
        data = b"".join(payload for payload, _, _ in group)
        error: OSError | None = None
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
        except OSError as exc:
            error = exc
        else:
            self._keep_memos(group)
            self._size += len(data)
            self._durable = Position(self._segment, self._size)
        _settle([waiter for _, waiter, _ in group], error)
        if error is None and self._size >= self.segment_bytes:
            os.close(self._fd)
            self._open_segment(self._segment + 1)

    def _keep_memos(self, group: list[tuple[bytes, Any, Any]]) -> None:
        offset = self._size
        for payload, _, memo in group:
            end = offset + len(payload)
            if memo is not None:
                if len(self.memos) >= self.max_memos:
                    # The flusher is behind (or stopped): it reads these lines back from the file.
                    self.memos.clear()
                self.memos.append(Memo(Position(self._segment, offset), Position(self._segment, end), memo))
            offset = end

    # --- reading and checkpoints -----------------------------------------------------------------

    @property
    def durable_end(self) -> Position:
        return self._durable

    def read(
        self, start: Position, *, max_bytes: int = 64 * 1024 * 1024, until: Position | None = None
    ) -> tuple[bytes, Position]:
        """Synced whole lines from ``start`` (up to ``until`` when given); returns them and the
        position after them."""
        end = self._durable if until is None else min(self._durable, until)
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
