"""The durable log: append-only segment files of JSON lines, with group commit.

``append`` returns once the bytes are on disk (written and ``fdatasync``'ed). Concurrent appends
are gathered by one writer thread into a single write and a single sync, so many requests share
the cost of one disk flush. Readers (the flusher) only ever see whole, synced lines.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import orjson

from warehouse.group_commit import Closed, GroupCommit
from warehouse.lake import fsync_path

SEGMENT_SUFFIX = ".log"
CHECKPOINT = "checkpoint.json"


@dataclass(frozen=True, order=True)
class Position:
    segment: int
    offset: int


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


@dataclass(frozen=True)
class Chunk:
    """Log lines for one flush step; ``commit`` once they are in the lake. ``replay``: lines whose
    keys nobody claimed in this process (a file log's lines from before it started, or lines read
    again after a failed commit), which the flusher checks against the lake's."""

    data: bytes
    replay: bool
    commit: Callable[[], None]
    # Lines of which only some rows are to be stored (a Redis log's partly re-sent batches): each
    # line with one flag per row, in the line's order.
    masked: tuple[tuple[bytes, tuple[bool, ...]], ...] = ()


class FileChunks:
    """A file log as the flusher reads it: whole lines from the checkpoint, committed by moving it."""

    def __init__(
        self, files: LogFiles, *, replay_end: Position | None = None, max_bytes: int = 64 * 1024 * 1024
    ) -> None:
        """``replay_end``: where the lines claimed by this process start (by default, what the log
        held when it was opened was written by an earlier process)."""
        self.files = files
        self.directory = files.directory
        self.max_bytes = max_bytes
        self.replay_end = files.durable_end if replay_end is None else replay_end

    def chunks(self) -> Iterator[Chunk]:
        # What the log holds now, and no more: lines appended while this flush runs wait for the next
        # one. Chasing them, the events flusher process would write many small files a second under
        # load, each with its syncs and renames.
        target = self.files.durable_end
        while True:
            start = self.files.checkpoint()
            replaying = start < self.replay_end
            data, end = self.files.read(
                start,
                max_bytes=self.max_bytes,
                until=min(self.replay_end, target) if replaying else target,
            )
            if not data:
                if end != start:
                    self.files.save_checkpoint(end)
                    continue
                return
            yield Chunk(data, replaying, partial(self._advance, end))

    def _advance(self, end: Position) -> None:
        try:
            self.files.save_checkpoint(end)
        except BaseException:
            # The rows are in the lake but the checkpoint did not move: the next flush reads them
            # again, and must check them against what was stored, as a replay does.
            self.replay_end = max(self.replay_end, end)
            raise


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


LogClosed = Closed


class LogWriteFailed(OSError):
    """An append that did not become durable (nothing of it was acknowledged; the client retries)."""


class DurableLog(LogFiles, GroupCommit):
    def __init__(
        self, directory: Path, *, segment_bytes: int = 64 * 1024 * 1024, max_group: int = 4096
    ) -> None:
        LogFiles.__init__(self, directory)
        self.segment_bytes = segment_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._recover()
        GroupCommit.__init__(self, name=f"log-{directory.name}", max_group=max_group)

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

    def _write(self, payloads: list[bytes]) -> None:
        data = b"".join(payloads)
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
        except OSError:
            # Take back what part of the group reached the file, so the next group starts a clean
            # line (another process reads the file's end, not this one's count).
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise
        self._size += len(data)
        self._durable = Position(self._segment, self._size)

    def _after_write(self) -> None:
        if self._size >= self.segment_bytes:
            os.close(self._fd)
            self._open_segment(self._segment + 1)

    # --- reading --------------------------------------------------------------------------------

    @property
    def durable_end(self) -> Position:
        return self._durable

    def close(self) -> None:
        if self._stop_writer():
            os.close(self._fd)


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
