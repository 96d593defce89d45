"""The events flusher in a process of its own: the server's log of events to the lake, every second.

In the server's process the flusher takes the GIL from the request thread often enough to cost the
events route a large share of its throughput (docs/decisions.md); here it runs on the other core.
The server still flushes events itself when asked (the flush hook, shutdown) and on start, under the
same cross-process lock, so either may run a flush and neither runs one twice.

    python -m ingest.flusher_process DATA_DIR INTERVAL_SECONDS SERVER_PID

It exits on SIGTERM after the flush under way, and within a second of its parent's death (a
``kill -9`` of the server): the next server replays whatever the log holds beyond the checkpoint.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import structlog

from ingest.dedupe import RecentKeys
from ingest.flusher import Flusher
from ingest.log import FileChunks, LogReader
from warehouse.lake import EVENTS, Lake

log = structlog.get_logger("aisle.flusher")


def spawn(data_dir: Path, interval_seconds: float) -> subprocess.Popen:
    # A fresh interpreter, not a fork: a child must not inherit the server's locks and descriptors
    # (the data directory's lock would outlive a killed server).
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ingest.flusher_process",
            str(data_dir),
            str(interval_seconds),
            str(os.getpid()),
        ],
        close_fds=True,
    )


class SupervisedProcess:
    """The events flusher process, respawned when it dies (a crash, the OOM killer, a ``kill -9``):
    while it is away the log keeps every event but none reaches the lake."""

    def __init__(self, data_dir: Path, interval_seconds: float, *, watch_seconds: float = 1.0) -> None:
        self.data_dir = data_dir
        self.interval_seconds = interval_seconds
        self.watch_seconds = watch_seconds
        self.process: subprocess.Popen | None = None
        self.respawns = 0
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self.process = spawn(self.data_dir, self.interval_seconds)
        self._watcher = threading.Thread(
            target=self._watch, args=(self.process,), name="events-flusher-watch", daemon=True
        )
        self._watcher.start()

    def _watch(self, process: subprocess.Popen) -> None:
        while not self._stop.wait(self.watch_seconds):
            code = process.poll()
            if code is not None and not self._stop.is_set():
                log.warning("events_flusher_lost", exit_code=code, pid=process.pid, respawning=True)
                self.process = process = spawn(self.data_dir, self.interval_seconds)
                self.respawns += 1

    def status(self) -> str:
        """For the health check: raises while the process is away."""
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError("the events flusher process is not running (accepted events wait in the log)")
        return f"pid {self.process.pid}, respawns: {self.respawns}"

    def stop(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        if self.process is not None:
            self.process.terminate()  # it finishes the flush under way
            self.process.wait(timeout=120)


def events_flusher(data_dir: Path, interval_seconds: float) -> Flusher:
    """The server flushed what its log held before it started this process, so every line beyond
    the checkpoint is one whose keys the server claimed when it accepted them. Keys are checked
    only when a flush is repeated after a failed checkpoint (the flusher then loads the lake's keys
    first), so this process keeps no second copy of the server's recent keys."""
    reader = LogReader(data_dir / "log" / EVENTS.name)
    return Flusher(
        table=EVENTS,
        source=FileChunks(reader, replay_end=reader.checkpoint()),
        lake=Lake(data_dir / "lake"),
        stored=RecentKeys(),
        interval_seconds=interval_seconds,
        claimed_at_accept=True,
    )


def run(data_dir: Path, interval_seconds: float, parent: int) -> None:
    """``parent``: the server's pid, from the server (read here, a server killed while this process
    was still starting would already have handed it to init)."""
    stop = threading.Event()
    # Set from a thread of its own: the handler runs on the main thread, which may hold the event's
    # lock inside ``stop.wait``, and setting it there would wait for that lock forever.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop.set).start())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server, which stops this process
    flusher = events_flusher(data_dir, interval_seconds)
    due = 0.0
    while not stop.is_set() and os.getppid() == parent:
        if time.monotonic() >= due:
            try:
                flusher.flush()
            except Exception:  # keep flushing later; the log still holds every row
                log.exception("flush_failed", table=EVENTS.name)
            due = time.monotonic() + interval_seconds
        stop.wait(min(interval_seconds, 1.0))  # look for the server at least once a second


if __name__ == "__main__":
    run(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))
