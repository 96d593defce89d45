"""Is the lake writer's data directory the one the servers read? Proved through the directory itself.

A standby `aisle flush` given a *copy* of the data directory (its ``log-id`` copied with it) would
take over when the real writer dies and move the log into the copy's lake, which no server reads.
Nothing inside a copy tells it apart from the original, so the proof comes from the readers: each
`aisle serve` of a Redis log registers in Redis and, twice a second, records the writer marks it finds
in its own data directory (``lake-writers/<mark>``, one file per writer, so writers proving at once do
not hide each other's). A writer writes a fresh mark of its own and moves nothing from the log until
every server registered has recorded it: only then does it take the writer lease. So:

- a writer on a copy is never proved while servers run on the original; it stops after
  ``PROOF_SECONDS`` without having held the lease, and the real directory's writer is never kept
  waiting by it;
- with no server running (all stopped, or stalled past their registration) a writer waits: the log
  keeps what it holds, and nobody reads a lake meanwhile;
- a server started on a copy (an operator's mistake too) does not see the real writer's mark: no
  writer is proved while it runs, and the refusal names it.
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

MARKS_DIR = "lake-writers"
READER_KEY = "aisle:log:reader:"
WITNESS_KEY = "aisle:log:writer-mark:"
TICK_SECONDS = 0.5
# A server killed with kill -9 stops counting as a reader this long after its last tick.
READER_TTL_SECONDS = 5
# How long the servers registered have to record a writer's mark before it gives up: a server records
# it within a tick; this leaves room for one busy with a load, and for one that died to expire.
PROOF_SECONDS = 15.0
# Marks of writers killed with kill -9 are removed by the next writer once this old.
STALE_MARK_SECONDS = 86_400


class NotTheReadersLake(RedisLogRefused):
    """Some server of this Redis log reads another data directory than this writer's."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _server(name: str, place: str) -> str:
    """A registered server as an operator finds it: its process and the directory it reads."""
    host, pid = (name.rsplit(":", 2) + ["?", "?"])[:2]
    return f"`aisle serve` process {pid} on {host} reads {place.split(':', 1)[-1]}"


class ReaderPresence:
    """A server of a Redis log: says it reads the lake, and records the writer marks its data
    directory holds."""

    def __init__(self, client: redis.Redis, data_dir: Path) -> None:
        self.client = client
        self.marks = data_dir / MARKS_DIR
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.where = f"{socket.gethostname()}:{data_dir.resolve()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def tick(self) -> None:
        found = [path.name for path in self.marks.iterdir()] if self.marks.is_dir() else []
        pipe = self.client.pipeline(transaction=False)
        pipe.set(READER_KEY + self.name, self.where, ex=READER_TTL_SECONDS)
        for mark in found:
            if not mark.startswith("."):  # a mark being written
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
    """The lake writer's side: its mark, and whether every server of the log was seen to read it."""

    def __init__(self, client: redis.Redis, data_dir: Path, *, proof_seconds: float | None = None) -> None:
        self.client = client
        self.data_dir = data_dir
        self.proof_seconds = PROOF_SECONDS if proof_seconds is None else proof_seconds
        self.mark = uuid.uuid4().hex
        self.mark_path = data_dir / MARKS_DIR / self.mark
        self.proved = False
        self._unseen_since: float | None = None

    def write_mark(self) -> None:
        self.mark_path.parent.mkdir(parents=True, exist_ok=True)
        for old in self.mark_path.parent.iterdir():
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > STALE_MARK_SECONDS:
                    old.unlink()
        partial = self.mark_path.with_name(f".{self.mark}")
        partial.write_text(str(os.getpid()))
        os.replace(partial, self.mark_path)

    def remove_mark(self) -> None:
        with contextlib.suppress(OSError):
            self.mark_path.unlink()

    def _readers(self) -> dict[str, str]:
        names = list(self.client.scan_iter(match=READER_KEY + "*", count=1000))
        places = self.client.mget(names) if names else []
        return {
            _text(name)[len(READER_KEY) :]: _text(place)
            for name, place in zip(names, places, strict=True)
            if place is not None
        }

    def check(self) -> bool:
        """True once every server registered (one at least) recorded the mark; False while none is
        registered, or some has had less than ``proof_seconds`` to; ``NotTheReadersLake`` after."""
        if self.proved:
            return True
        readers = self._readers()
        seen = {_text(name) for name in self.client.smembers(WITNESS_KEY + self.mark)}
        unseen = {name: place for name, place in readers.items() if name not in seen}
        if readers and not unseen:
            self.proved = True
            log.info("lake_writer_directory_proved", data_dir=str(self.data_dir), servers=len(readers))
            return True
        if not unseen:  # no server registered: nobody to ask, and nobody reading
            self._unseen_since = None
            return False
        now = time.monotonic()
        if self._unseen_since is None:
            self._unseen_since = now
        if now - self._unseen_since >= self.proof_seconds:
            raise NotTheReadersLake(
                f"not every server of this Redis log sees {self.data_dir.resolve()} "
                f"({'; '.join(_server(n, p) for n, p in sorted(unseen.items()))}); "
                "nothing was moved from the log. Every `aisle serve` and the `aisle flush` of an install "
                "must use the same data directory, never a copy of it."
            )
        return False

    def prove(self, stop: threading.Event) -> bool:
        """Write the mark and wait until every server registered recorded it (True), or ``stop`` is set
        (False); ``NotTheReadersLake`` when some server does not within ``proof_seconds``."""
        self.write_mark()
        waiting_logged = False
        while True:
            try:
                if self.check():
                    return True
            except redis.RedisError as exc:  # Redis away: asked again
                log.warning("lake_writer_directory_not_checked", error=repr(exc))
            if self._unseen_since is None and not waiting_logged:
                log.warning("lake_writer_waiting_for_a_server", reason="no server of this log is running")
                waiting_logged = True
            if stop.wait(TICK_SECONDS / 2):
                return False
