"""A lake writer moves the Redis log only into the data directory its servers read: a standby
`aisle flush` given a copy of the directory is found out and takes nothing, and the real directory's
writer is never locked out by what a copy did."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import redis

from aisle.settings import Settings
from api.app import create_app
from ingest import lake_readers, writer_lease
from ingest.lake_readers import (
    MARKS_DIR,
    READER_KEY,
    WITNESS_KEY,
    NotTheReadersLake,
    ReaderPresence,
    WriterDirectory,
)
from ingest.service import Ingest
from ingest.stream_log import stream_key
from jobs import lake_writer
from tests.ingest.test_redis_log import api_process, ctx, event, stored
from tests.servers import LiveServer

pytestmark = pytest.mark.redis


def client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=3)


@pytest.fixture
def presences() -> list[ReaderPresence]:
    started: list[ReaderPresence] = []
    yield started
    for presence in started:
        presence.stop()


def reader_on(presences: list[ReaderPresence], data_dir: Path, url: str) -> ReaderPresence:
    """What every `aisle serve` of a Redis log runs beside its Ingest."""
    presence = ReaderPresence(client(url), data_dir)
    presence.start()
    presences.append(presence)
    return presence


def settings_for(data_dir: Path, url: str) -> Settings:
    return Settings(data_dir=data_dir, redis_url=url, durable_log="redis", flush_interval_seconds=0.2)


def run_writer(data_dir: Path, url: str) -> tuple[threading.Thread, threading.Event, list[BaseException]]:
    """`aisle flush` on ``data_dir`` in a thread; its error, if any, in the list."""
    stop, errors = threading.Event(), []

    def body() -> None:
        try:
            lake_writer.run(settings_for(data_dir, url), stop)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            errors.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, stop, errors


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_writer_on_the_servers_directory_is_proved_once_every_server_records_its_mark(
    tmp_path, redis_log_url, presences
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    reader_on(presences, data_dir, redis_log_url)
    reader_on(presences, data_dir, redis_log_url)
    writer = WriterDirectory(client(redis_log_url), data_dir)
    began = time.monotonic()
    assert writer.prove(threading.Event())
    assert time.monotonic() - began < 2  # a server records marks twice a second
    assert (data_dir / MARKS_DIR / writer.mark).exists()
    writer.remove_mark()
    assert not (data_dir / MARKS_DIR / writer.mark).exists()


def test_a_writer_on_a_copy_is_refused_while_servers_read_the_original(tmp_path, redis_log_url, presences):
    data_dir, copy = tmp_path / "data", tmp_path / "copy"
    data_dir.mkdir()
    reader_on(presences, data_dir, redis_log_url)
    assert WriterDirectory(client(redis_log_url), data_dir).prove(threading.Event())
    shutil.copytree(data_dir, copy)  # the real writer's mark too
    on_copy = WriterDirectory(client(redis_log_url), copy, proof_seconds=1)
    refused = rf"not every server of this Redis log sees .*copy \(`aisle serve` process {os.getpid()} on .* reads .*data\).*never a copy"
    with pytest.raises(NotTheReadersLake, match=refused):
        on_copy.prove(threading.Event())
    # The real directory is not locked out: its next writer is proved as the first one was.
    assert WriterDirectory(client(redis_log_url), data_dir).prove(threading.Event())


def test_two_writers_proving_at_once_on_the_servers_directory_are_both_proved(
    tmp_path, redis_log_url, presences
):
    """Each writer's mark is a file of its own: one does not hide the other's."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    reader_on(presences, data_dir, redis_log_url)
    first, second = (WriterDirectory(client(redis_log_url), data_dir, proof_seconds=3) for _ in range(2))
    first.write_mark()
    assert second.prove(threading.Event())
    assert first.prove(threading.Event())


def test_with_no_server_running_a_writer_waits_and_takes_nothing(tmp_path, redis_log_url, presences):
    """Servers stopped, or stalled past their registration: a writer on a copy moved the log into its
    lake meanwhile (a black-box check lost 220 acknowledged events so)."""
    data_dir, copy = tmp_path / "data", tmp_path / "copy"
    data_dir.mkdir()
    copy.mkdir()
    stop = threading.Event()
    on_copy = WriterDirectory(client(redis_log_url), copy, proof_seconds=1)
    outcome: list = []

    def prove() -> None:
        try:
            outcome.append(on_copy.prove(stop))
        except NotTheReadersLake as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=prove)
    waiting.start()
    time.sleep(1.5)
    assert not outcome and not on_copy.proved  # waiting, whatever the time
    reader_on(presences, data_dir, redis_log_url)  # the servers come back, on the real directory
    waiting.join(timeout=5)
    assert isinstance(outcome[0], NotTheReadersLake)
    real = WriterDirectory(client(redis_log_url), data_dir)
    assert real.prove(stop)
    # And a writer told to stop while it waits stops.
    for presence in presences:
        presence.stop()
    presences.clear()
    wait_for(lambda: not client(redis_log_url).keys(READER_KEY + "*"))
    stop.set()
    assert WriterDirectory(client(redis_log_url), data_dir).prove(stop) is False


def test_a_server_on_a_copy_proves_no_writer_and_is_named(tmp_path, redis_log_url, presences):
    """A server started on a copy recorded the copy's writer mark, which then moved the log into the
    copy's lake (a black-box check)."""
    data_dir, copy = tmp_path / "data", tmp_path / "copy"
    data_dir.mkdir()
    reader_on(presences, data_dir, redis_log_url)
    shutil.copytree(data_dir, copy)
    reader_on(presences, copy, redis_log_url)
    for directory, other in ((copy, data_dir), (data_dir, copy)):
        # The one server that does not see the writer's directory is named, with the one it reads.
        refused = rf"not every server .* sees .*{directory.name} \(`aisle serve` process \d+ on .* reads .*{other.name}\);"
        with pytest.raises(NotTheReadersLake, match=refused):
            WriterDirectory(client(redis_log_url), directory, proof_seconds=1).prove(threading.Event())


def test_a_flush_told_to_stop_before_it_lets_go_of_the_log_leaves_the_entries_for_the_next(
    tmp_path, redis_log_url, opened
):
    """A server that starts while an unproved writer flushes: the chunk already written to that lake
    stays in the log, and the next allowed flush stores each row once."""
    data_dir = tmp_path / "data"
    api = api_process(opened, data_dir, redis_log_url)
    api.accept_events_sync([event("e-1"), event("e-2")], ctx())
    answers = iter([True, False])  # allowed at the start, refused before the log lets go
    writer = Ingest(data_dir=data_dir, stream_url=redis_log_url, flush_in_background=False,
                    may_write=lambda: next(answers, True))  # fmt: skip
    opened.append(writer)
    assert writer.flush() == 2
    assert client(redis_log_url).xlen(stream_key("events")) == 1  # one batch line, still there
    assert writer.flush() == 0  # read again, and found in the lake
    assert client(redis_log_url).xlen(stream_key("events")) == 0
    assert stored(data_dir) == ["e-1", "e-2"]


def test_a_standby_flusher_on_a_copy_takes_over_and_takes_nothing_then_the_real_one_stores_all_once(
    tmp_path, redis_log_url, opened, presences, monkeypatch
):
    """The black-box check's case: `aisle flush` on a copy of the data directory (its `log-id` with
    it) waited for the lease and, when the real writer died, moved the log into the copy's lake."""
    monkeypatch.setattr(writer_lease, "TTL_SECONDS", 1)
    monkeypatch.setattr(lake_readers, "PROOF_SECONDS", 1.5)
    data_dir, copy = tmp_path / "data", tmp_path / "copy"
    api = api_process(opened, data_dir, redis_log_url)
    reader_on(presences, data_dir, redis_log_url)
    api.accept_events_sync([event("e-1")], ctx())
    thread, stop, errors = run_writer(data_dir, redis_log_url)
    wait_for(lambda: stored(data_dir) == ["e-1"])
    shutil.copytree(data_dir, copy, symlinks=True)  # while the real writer runs: its mark and lock too
    stop.set()  # the real writer goes away
    thread.join(timeout=30)
    assert not errors
    api.accept_events_sync([event("e-2"), event("e-3")], ctx())
    on_copy, _, copy_errors = run_writer(copy, redis_log_url)
    on_copy.join(timeout=30)
    assert isinstance(copy_errors[0], NotTheReadersLake)
    assert stored(copy) == ["e-1"]
    assert client(redis_log_url).xlen(stream_key("events")) == 1  # e-2 and e-3 wait for the real writer
    thread, stop, errors = run_writer(data_dir, redis_log_url)
    wait_for(lambda: stored(data_dir) == ["e-1", "e-2", "e-3"])
    stop.set()
    thread.join(timeout=30)
    assert not errors


def test_a_server_of_a_redis_log_registers_and_records_the_marks_in_its_directory(tmp_path, redis_log_url):
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_log_url, durable_log="redis",
                        jwt_secret="test-signing-key-" + "x" * 32, event_batch_workers=0)  # fmt: skip
    with LiveServer(create_app(settings)):
        readers = client(redis_log_url).keys(READER_KEY + "*")
        assert len(readers) == 1
        assert client(redis_log_url).get(readers[0]).decode().endswith(str((tmp_path / "data").resolve()))
        (tmp_path / "data" / MARKS_DIR).mkdir(exist_ok=True)
        (tmp_path / "data" / MARKS_DIR / "m-1").write_text("1")
        wait_for(lambda: client(redis_log_url).scard(WITNESS_KEY + "m-1") == 1, 3)
    assert not client(redis_log_url).keys(READER_KEY + "*")  # a server that stops says so
