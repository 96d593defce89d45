"""The events flusher as a process of its own: it reads whole lines the server wrote, writes them
to the lake once, shares the flush lock with the server, and never outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from ingest import flusher_process
from ingest.flusher import FlushLock
from ingest.log import DurableLog, LogReader, Position
from ingest.service import Ingest
from ingest.validation import Context
from warehouse.engine import Engine
from warehouse.lake import EVENTS, Lake

# Starts and kills flusher processes.
pytestmark = pytest.mark.slow

SITE = "11111111-1111-1111-1111-111111111111"
ROOT = Path(__file__).resolve().parents[2]


def ctx() -> Context:
    return Context(site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="web")


def event(event_id: str) -> dict:
    return {"name": "page_view", "eventId": event_id, "visitorId": "v-1", "sessionId": "s-1"}


def stored_ids(data_dir: Path) -> list[str]:
    files = sorted((data_dir / "lake" / "events").glob("*/*/*.parquet"))
    if not files:
        return []
    listing = ", ".join(f"'{f}'" for f in files)
    return [
        row[0] for row in duckdb.sql(f"SELECT event_id FROM read_parquet([{listing}]) ORDER BY 1").fetchall()
    ]


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def ingest(tmp_path: Path) -> Iterator[Ingest]:
    service = Ingest(data_dir=tmp_path, flush_interval_seconds=0.2, events_flusher_process=True)
    service.start()
    yield service
    service.stop()


def test_the_process_flushes_accepted_events_and_the_server_thread_does_not(ingest, tmp_path):
    assert ingest._events_process.process.poll() is None
    assert ingest.flushers[EVENTS.name]._thread is None
    ingest.accept_events_sync([event("e-1"), event("e-2")], ctx())
    assert wait_for(lambda: stored_ids(tmp_path) == ["e-1", "e-2"])


def test_a_killed_flusher_process_is_respawned_and_flushes_what_waited(ingest, tmp_path):
    supervised = ingest._events_process
    first = supervised.process
    assert ingest.flusher_status() == f"pid {first.pid}, respawns: 0"
    first.kill()
    first.wait()
    ingest.accept_events_sync([event("e-1")], ctx())
    assert wait_for(lambda: stored_ids(tmp_path) == ["e-1"])
    assert supervised.respawns == 1 and supervised.process.pid != first.pid
    assert ingest.flusher_status() == f"pid {supervised.process.pid}, respawns: 1"


def test_the_health_check_fails_while_the_flusher_process_is_away(tmp_path):
    service = Ingest(data_dir=tmp_path, flush_interval_seconds=3600, events_flusher_process=True)
    service.start()
    supervised = service._events_process
    supervised._stop.set()  # the watcher stands still, as between a death and its respawn
    supervised._watcher.join()
    supervised.process.kill()
    supervised.process.wait()
    with pytest.raises(RuntimeError, match="events flusher process is not running"):
        service.flusher_status()
    service.stop()


def test_server_flushes_and_process_flushes_store_each_event_once(ingest, tmp_path):
    for n in range(20):
        ingest.accept_events_sync([event(f"e-{n}")], ctx())
        if n % 3 == 0:
            ingest.flush()  # the flush hook, racing the process for the same lines
    ingest.flush()
    assert stored_ids(tmp_path) == sorted(f"e-{n}" for n in range(20))


def test_stop_ends_the_process_and_flushes_the_rest(tmp_path):
    service = Ingest(data_dir=tmp_path, flush_interval_seconds=3600, events_flusher_process=True)
    service.start()
    child = service._events_process.process
    service.accept_events_sync([event("e-1")], ctx())
    service.stop()
    assert child.poll() is not None
    assert stored_ids(tmp_path) == ["e-1"]


@pytest.mark.parametrize("server_dies", ["at once", "after a while"])
def test_the_process_exits_when_its_server_is_killed(tmp_path, server_dies):
    # A stand-in server spawns the flusher process and prints its pid; then it dies at once (before
    # the child has even started: the child must not mistake init for its server) or is killed later.
    end = "os._exit(0)" if server_dies == "at once" else "time.sleep(600)"
    DurableLog(tmp_path / "log" / EVENTS.name).close()  # the log a server would have opened
    parent = subprocess.Popen(
        [sys.executable, "-c", "import os, sys, time; from pathlib import Path; from ingest import flusher_process;"
         f" child = flusher_process.spawn(Path({str(tmp_path)!r}), 3600); print(child.pid, flush=True); {end}"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    child_pid = int(parent.stdout.readline())
    if server_dies == "after a while":
        time.sleep(1.5)
        os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    def gone() -> bool:
        try:
            os.kill(child_pid, 0)
        except ProcessLookupError:
            return True
        # A zombie until someone reaps it; it has exited all the same.
        return Path(f"/proc/{child_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"

    assert wait_for(gone, seconds=15)


def test_the_log_reader_sees_whole_lines_up_to_the_end_of_the_last_segment(tmp_path):
    writer = DurableLog(tmp_path / "log", segment_bytes=16)
    try:
        writer.append_sync(b'{"n":1}\n{"n":2}\n')  # fills segment 1; the next append opens segment 2
        writer.append_sync(b'{"n":3}\n')
        with open(tmp_path / "log" / "000000000002.log", "ab") as torn:
            torn.write(b'{"n":4')  # a line still being written
        reader = LogReader(tmp_path / "log")
        assert reader.durable_end == Position(2, 14)
        first, end = reader.read(Position(1, 0))
        second, last = reader.read(end)
        assert (first, second) == (b'{"n":1}\n{"n":2}\n', b'{"n":3}\n')
        assert last == Position(2, 8)
        assert reader.read(last) == (b"", last)
    finally:
        writer.close()


def test_the_flush_lock_excludes_other_processes(tmp_path):
    lock = FlushLock(tmp_path / "flush.lock")
    probe = (
        "import fcntl, sys; handle = open(sys.argv[1], 'a')\n"
        "try:\n    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
        "except BlockingIOError:\n    print('held')"
    )

    def seen_from_another_process() -> str:
        return subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path / "flush.lock")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    with lock:
        assert seen_from_another_process() == "held"
    assert seen_from_another_process() == "free"
    lock.close()


def test_the_engine_sees_files_another_process_wrote(tmp_path):
    ours, theirs = Lake(tmp_path / "lake"), Lake(tmp_path / "lake")
    engine = Engine(ours)
    try:
        assert engine.cursor().execute("SELECT count(*) FROM events").fetchone() == (0,)
        service = Ingest(data_dir=tmp_path / "other", events_flusher_process=False)
        service.lake = theirs  # another process's view of the same lake
        service.flushers[EVENTS.name].lake = theirs
        service.accept_events_sync([event("e-1")], ctx())
        service.flush()
        service.stop()
        assert engine.cursor().execute("SELECT event_id FROM events").fetchall() == [("e-1",)]
    finally:
        engine.close()


def test_a_flush_repeated_after_a_failed_checkpoint_stores_nothing_twice(tmp_path, monkeypatch):
    """The process keeps no keys of its own: on the repeat it loads the lake's before writing."""
    server = Ingest(data_dir=tmp_path, events_flusher_process=False)
    try:
        server.accept_events_sync([event(f"e-{n}") for n in range(5)], ctx())
        flusher = flusher_process.events_flusher(tmp_path, 1.0)
        real_save = LogReader.save_checkpoint
        calls: list[Position] = []

        def fail_once(self, position):
            calls.append(position)
            if len(calls) == 1:
                raise OSError("disk full")
            return real_save(self, position)

        monkeypatch.setattr(LogReader, "save_checkpoint", fail_once)
        with pytest.raises(OSError, match="disk full"):
            flusher.flush()
        assert stored_ids(tmp_path) == [f"e-{n}" for n in range(5)]
        assert len(flusher.stored) == 0
        assert flusher.flush() == 0  # read again, every key found in the lake
        assert stored_ids(tmp_path) == [f"e-{n}" for n in range(5)]
        server.accept_events_sync([event("e-5")], ctx())
        assert flusher.flush() == 1
    finally:
        server.stop()
