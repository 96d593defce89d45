"""Is the lake writer's data directory the one the servers read? Proved through the directory itself.

A standby `aisle flush` given a *copy* of the data directory (its ``log-id`` copied with it) took
over when the real writer died and moved the log into the copy's lake, which no server reads. Nothing
inside a copy tells it apart from the original, so the proof comes from the readers: each `aisle serve`
of a Redis log registers in Redis and, twice a second, reads the writer's mark file in its own data
directory and records the mark it finds. A writer starts by writing a fresh mark into its directory
and flushes only once some server recorded it. A writer on a copy never sees its mark recorded and
stops (releasing the lease to a writer on the real directory); the real directory's writer is proved
within a second, whatever a copy did before it (each writer's mark is its own).

With no server running there is nobody to ask and nothing reading either lake: the writer flushes
unproved and keeps asking; when servers appear and none of them sees its mark, it stops.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import redis
import structlog

from ingest.stream_log import RedisLogRefused

log = structlog.get_logger("aisle.lake_readers")

MARK_FILE = "lake-writer-mark"
READER_KEY = "aisle:log:reader:"
WITNESS_KEY = "aisle:log:writer-mark:"
TICK_SECONDS = 0.5
# A server killed with kill -9 stops counting as a reader this long after its last tick.
READER_TTL_SECONDS = 5
# How long live servers have to record a writer's mark before the writer takes itself for a copy's: a
# server records it within a tick; this leaves room for one busy with a load, and is well past the
# time a server that died or stalled keeps counting (a writer on the real directory then runs
# unproved rather than being refused).
PROOF_SECONDS = 15.0


class NotTheReadersLake(RedisLogRefused):
    """The servers of this Redis log read another data directory than this writer's."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class ReaderPresence:
    """A server of a Redis log: says it reads the lake, and records the writer marks its data
    directory holds."""

    def __init__(self, client: redis.Redis, data_dir: Path) -> None:
        self.client = client
        self.mark_path = data_dir / MARK_FILE
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.where = f"{socket.gethostname()}:{data_dir.resolve()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def tick(self) -> None:
        mark = self.mark_path.read_text().strip() if self.mark_path.exists() else ""
        pipe = self.client.pipeline(transaction=False)
        pipe.set(READER_KEY + self.name, self.where, ex=READER_TTL_SECONDS)
        if mark:
            pipe.sadd(WITNESS_KEY + mark, self.name)
            pipe.expire(WITNESS_KEY + mark, 3600)
        pipe.execute()

    def start(self) -> None:
        """Register now (before the server accepts a row), then every tick."""
        self._tick_logged()
        self._thread = threading.Thread(target=self._run, name="lake-reader-presence", daemon=True)
        self._thread.start()

    def _tick_logged(self) -> None:
        try:
            self.tick()
        except (OSError, redis.RedisError) as exc:  # Redis or the disk away: said again next tick
            if not self._failing:  # once an outage, not twice a second
                log.warning("lake_reader_presence_not_recorded", error=repr(exc))
            self._failing = True
        else:
            self._failing = False

    def _run(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self._tick_logged()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(redis.RedisError):
            self.client.delete(READER_KEY + self.name)
        self.client.close()


class WriterDirectory:
    """The lake writer's side: its mark, and whether a server of the log was seen to read it."""

    def __init__(self, client: redis.Redis, data_dir: Path, *, proof_seconds: float = PROOF_SECONDS) -> None:
        self.client = client
        self.data_dir = data_dir
        self.proof_seconds = proof_seconds
        self.mark = uuid.uuid4().hex
        self.proved = False
        self._readers_since: float | None = None
        self._lock = threading.Lock()  # flushers of four tables and the main loop ask at once

    def write_mark(self) -> None:
        path = self.data_dir / MARK_FILE
        partial = path.with_name(f".{MARK_FILE}.{self.mark}")
        partial.write_text(self.mark)
        os.replace(partial, path)  # a server never reads half a mark

    def _readers(self) -> dict[str, str]:
        names = list(self.client.scan_iter(match=READER_KEY + "*", count=1000))
        places = self.client.mget(names) if names else []
        return {
            _text(name)[len(READER_KEY) :]: _text(place)
            for name, place in zip(names, places, strict=True)
            if place is not None
        }

    def check(self) -> bool:
        """True once proved; False while no server runs, or servers run and have had less than
        ``proof_seconds`` to record the mark; ``NotTheReadersLake`` after that."""
        with self._lock:
            return self._check()

    def _check(self) -> bool:
        if self.proved:
            return True
        if self.client.scard(WITNESS_KEY + self.mark):
            self.proved = True
            log.info("lake_writer_directory_proved", data_dir=str(self.data_dir))
            return True
        readers = self._readers()
        if not readers:
            self._readers_since = None
            return False
        now = time.monotonic()
        if self._readers_since is None:
            self._readers_since = now
        if now - self._readers_since >= self.proof_seconds:
            where = ", ".join(sorted(set(readers.values())))
            raise NotTheReadersLake(
                f"the servers of this Redis log (reading {where}) do not see {self.data_dir.resolve()}: "
                "this `aisle flush` would move the log into a lake no server reads (a copy of the data "
                "directory?). A standby must mount the servers' own data directory, never a copy."
            )
        return False

    def may_write(self) -> bool:
        """Whether a flush may move the log into this lake now: proved, or no server runs (nobody
        reads either lake). Asked again before a flush lets the log go of its entries, so a server
        that started meanwhile (it registers before it accepts a row) holds them back."""
        if self.proved:
            return True
        with contextlib.suppress(NotTheReadersLake), self._lock:
            return self._check() or self._readers_since is None
        return False

    def prove(self) -> bool:
        """Write the mark and wait for a server to record it: True when one did, False when no server
        runs (flushing unproved); ``NotTheReadersLake`` when servers run and none does."""
        self.write_mark()
        while not self.check():
            if self._readers_since is None:
                log.warning("lake_writer_directory_unproved", reason="no server of this log is running")
                return False
            time.sleep(TICK_SECONDS / 4)
        return True
