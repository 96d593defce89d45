"""The durable log on disk: appends, group commit, segments, checkpoints and torn-tail recovery."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from ingest.log import CHECKPOINT, DurableLog, LogClosed, Position


@pytest.fixture
def opened() -> Iterator[list[DurableLog]]:
    """Logs a test opens; closed at the end even when the test fails."""
    logs: list[DurableLog] = []
    yield logs
    for log in logs:
        log.close()


def open_log(opened: list[DurableLog], directory: Path, **options) -> DurableLog:
    log = DurableLog(directory, **options)
    opened.append(log)
    return log


def line(number: int, **extra) -> bytes:
    return orjson.dumps({"n": number, **extra}) + b"\n"


def read_all(log: DurableLog, start: Position = Position(1, 0)) -> tuple[list[bytes], Position]:
    lines: list[bytes] = []
    position = start
    while True:
        data, end = log.read(position)
        if not data:
            return lines, end
        lines.extend(data.splitlines(keepends=True))
        position = end


def test_append_then_read_returns_exactly_the_lines(tmp_path, opened):
    log = open_log(opened, tmp_path / "log")
    assert log.read(Position(1, 0)) == (b"", Position(1, 0))
    log.append_sync(line(1))
    log.append_sync(line(2) + line(3))
    data, end = log.read(Position(1, 0))
    assert data == b'{"n":1}\n{"n":2}\n{"n":3}\n'
    assert end == Position(1, 24) == log.durable_end
    assert log.read(end) == (b"", end)
    assert log.read(Position(1, 8)) == (b'{"n":2}\n{"n":3}\n', Position(1, 24))
    assert (tmp_path / "log" / "000000000001.log").read_bytes() == data


def test_async_append_is_durable_when_it_returns(tmp_path, opened):
    log = open_log(opened, tmp_path / "log")

    async def main():
        await asyncio.gather(*(log.append(line(i)) for i in range(50)))

    asyncio.run(main())
    lines, end = read_all(log)
    assert sorted(orjson.loads(x)["n"] for x in lines) == list(range(50))
    assert end.offset == (tmp_path / "log" / "000000000001.log").stat().st_size


def test_read_is_capped_by_max_bytes_at_a_line_boundary(tmp_path, opened):
    log = open_log(opened, tmp_path / "log")
    for i in range(10):
        log.append_sync(line(i))  # 8 bytes each
    data, end = log.read(Position(1, 0), max_bytes=20)
    assert data == b'{"n":0}\n{"n":1}\n'
    assert end == Position(1, 16)


def test_concurrent_appends_are_each_stored_once_in_shared_syncs(tmp_path, opened, monkeypatch):
    log = open_log(opened, tmp_path / "log")
    syncs = []
    real_sync = os.fdatasync

    def counting_sync(fd: int) -> None:
        syncs.append(fd)
        time.sleep(0.001)  # a disk flush takes time; appends that arrive meanwhile join the next group
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", counting_sync)
    threads, per_thread = 8, 200
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(per_thread):
                log.append_sync(line(i, t=t))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for worker_thread in workers:
        worker_thread.start()
    for worker_thread in workers:
        worker_thread.join()
    assert errors == []
    lines, _ = read_all(log)
    seen = [(orjson.loads(x)["t"], orjson.loads(x)["n"]) for x in lines]
    assert len(seen) == threads * per_thread
    assert set(seen) == {(t, i) for t in range(threads) for i in range(per_thread)}
    # Each thread's own appends stay in order.
    for t in range(threads):
        assert [i for tt, i in seen if tt == t] == list(range(per_thread))
    appends = threads * per_thread
    assert 0 < len(syncs) < appends // 2, f"{len(syncs)} syncs for {appends} appends"


def wait_for_segment(log: DurableLog, number: int) -> None:
    """The writer rolls to a new segment just after it acknowledges the group that filled the last one."""
    deadline = time.monotonic() + 2
    while log.durable_end.segment < number and time.monotonic() < deadline:
        time.sleep(0.005)
    assert log.durable_end == Position(number, 0)


def test_segments_roll_and_reads_cross_them(tmp_path, opened):
    directory = tmp_path / "log"
    log = open_log(opened, directory, segment_bytes=60)
    for i in range(10, 22):
        log.append_sync(line(i, pad="x" * 4))  # 22 bytes per line: a new segment after every third
    wait_for_segment(log, 5)
    assert log.segments() == [1, 2, 3, 4, 5]
    assert [(directory / f"{n:012d}.log").stat().st_size for n in (1, 2, 3, 4, 5)] == [66, 66, 66, 66, 0]
    lines, end = read_all(log)
    assert [orjson.loads(x)["n"] for x in lines] == list(range(10, 22))
    assert end == Position(5, 0)
    # One read never spans two segments.
    data, first_end = log.read(Position(1, 0))
    assert (len(data.splitlines()), first_end) == (3, Position(1, 66))
    padded = [line(i, pad="x" * 4) for i in (13, 14, 15)]
    assert log.read(Position(1, 66)) == (b"".join(padded), Position(2, 66))


def test_checkpoint_is_saved_loaded_and_drops_older_segments(tmp_path, opened):
    directory = tmp_path / "log"
    log = open_log(opened, directory, segment_bytes=60)
    assert log.checkpoint() == Position(1, 0)
    for i in range(9):
        log.append_sync(line(i, pad="x" * 4))  # 21 bytes per line
    wait_for_segment(log, 4)
    assert log.segments() == [1, 2, 3, 4]
    log.save_checkpoint(Position(3, 21))
    assert log.checkpoint() == Position(3, 21)
    assert orjson.loads((directory / CHECKPOINT).read_bytes()) == {"segment": 3, "offset": 21}
    assert not (directory / "checkpoint.tmp").exists()
    assert log.segments() == [3, 4]
    lines, _ = read_all(log, log.checkpoint())
    assert [orjson.loads(x)["n"] for x in lines] == [7, 8]
    log.close()
    reopened = open_log(opened, directory, segment_bytes=60)
    assert reopened.checkpoint() == Position(3, 21)
    assert reopened.segments() == [3, 4]
    reopened.append_sync(line(9, pad="x" * 4))
    lines, _ = read_all(reopened, reopened.checkpoint())
    assert [orjson.loads(x)["n"] for x in lines] == [7, 8, 9]


def test_recovery_truncates_a_torn_tail(tmp_path, opened):
    directory = tmp_path / "log"
    log = open_log(opened, directory)
    for i in range(3):
        log.append_sync(line(i))
    log.close()
    segment = directory / "000000000001.log"
    with open(segment, "ab") as handle:
        handle.write(b'{"n": 3, "broken\n')  # a whole line that is not JSON
        handle.write(b'{"n": 4')  # a torn write: no newline
    reopened = open_log(opened, directory)
    assert segment.read_bytes() == b'{"n":0}\n{"n":1}\n{"n":2}\n'
    lines, end = read_all(reopened)
    assert lines == [line(0), line(1), line(2)]
    assert end == Position(1, 24)
    reopened.append_sync(line(5))
    lines, end = read_all(reopened)
    assert lines == [line(0), line(1), line(2), line(5)]
    assert end == Position(1, 32)


def test_recovery_keeps_a_tail_that_is_whole(tmp_path, opened):
    directory = tmp_path / "log"
    log = open_log(opened, directory)
    log.append_sync(line(0) + line(1))
    log.close()
    reopened = open_log(opened, directory)
    assert read_all(reopened)[0] == [line(0), line(1)]


def test_recovery_scans_the_last_segment_only_from_the_checkpoint(tmp_path, opened):
    directory = tmp_path / "log"
    log = open_log(opened, directory)
    log.append_sync(line(0) + line(1))
    log.save_checkpoint(Position(1, 8))
    log.close()
    with open(directory / "000000000001.log", "ab") as handle:
        handle.write(b"garbage")
    reopened = open_log(opened, directory)
    assert reopened.durable_end == Position(1, 16)
    assert read_all(reopened, reopened.checkpoint())[0] == [line(1)]


def test_a_closed_log_refuses_appends(tmp_path, opened):
    log = open_log(opened, tmp_path / "log")
    log.append_sync(line(0))
    log.close()
    log.close()  # twice is fine
    with pytest.raises(LogClosed):
        log.append_sync(line(1))
