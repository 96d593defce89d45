"""The Redis log (AISLE_DURABLE_LOG=redis): API processes that share a data directory log to Redis
Streams and claim keys in Redis; a flush moves the streams to the lake exactly once."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
import redis

from aisle.settings import Settings
from ingest import writer_lease
from ingest.lake_readers import ReaderPresence
from ingest.log import LogWriteFailed
from ingest.service import DataDirBusy, Ingest, flush_file_log
from ingest.stream_log import LogNotDurable, LogOfAnotherDataDir, StreamLog, stream_key
from ingest.validation import Context
from ingest.writer_lease import LakeWriterBusy, WriterLease
from jobs import lake_writer
from warehouse.lake import EVENTS, ORDERS

pytestmark = pytest.mark.redis

SITE = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def api_process(opened: list[Ingest], data_dir: Path, url: str) -> Ingest:
    """An Ingest as one `aisle serve` on a Redis log has it: accepts, flushes only when told."""
    service = Ingest(data_dir=data_dir, stream_url=url, flush_in_background=False)
    opened.append(service)
    service.start()
    return service


def ctx() -> Context:
    return Context(site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                   historical=True)  # fmt: skip


def event(event_id: str) -> dict:
    return {"name": "page_view", "eventId": event_id, "visitorId": "v-1", "sessionId": "s-1",
            "timestamp": "2026-11-20T10:00:00Z"}  # fmt: skip


def order(order_id: str) -> dict:
    return {"orderId": order_id, "visitorId": "v-1", "sessionId": "s-1", "total": "10.00",
            "timestamp": "2026-11-20T10:00:00Z", "items": [{"productItemCode": "P1", "quantity": 1, "price": "10.00"}]}  # fmt: skip


def stored(data_dir: Path, table=EVENTS) -> list[str]:
    files = list((data_dir / "lake" / table.name).glob("*/*/*.parquet"))
    if not files:
        return []
    return sorted(row[0] for row in duckdb.sql(
        f"SELECT {table.key} FROM read_parquet({[str(f) for f in files]})").fetchall())  # fmt: skip


def flush_losing_the_acknowledgement(service: Ingest, monkeypatch) -> None:
    """A flush that writes its Parquet files, then loses Redis before it acknowledges (as a killed
    flusher would): its entries stay pending."""

    def lost_connection(self, ids):
        raise redis.ConnectionError("connection lost")

    with monkeypatch.context() as patched:
        patched.setattr(StreamLog, "_acknowledge", lost_connection)
        with pytest.raises(redis.ConnectionError):
            service.flush()


def stream_entries(url: str, table=EVENTS) -> int:
    return redis.Redis.from_url(url).xlen(stream_key(table.name))


def test_a_redis_that_answers_before_its_disk_is_refused(tmp_path, redis_server):
    with pytest.raises(LogNotDurable, match="appendfsync always"):
        Ingest(data_dir=tmp_path, stream_url=redis_server.url, flush_in_background=False)


def test_accepted_events_reach_the_lake_once_and_leave_the_stream(tmp_path, opened, redis_log_url):
    api = api_process(opened, tmp_path, redis_log_url)
    result = api.accept_events_sync([event("e-1"), event("e-2"), event("e-1")], ctx())
    assert (result.accepted, result.duplicates) == (3, 1)
    assert stream_entries(redis_log_url) == 1  # one entry per batch
    assert stored(tmp_path) == []  # in Redis, not yet in the lake
    assert api.flush() == 2
    assert stored(tmp_path) == ["e-1", "e-2"]
    assert stream_entries(redis_log_url) == 0
    assert api.logs[EVENTS.name].pending() == 0
    assert api.flush() == 0


def test_concurrent_appends_are_sent_in_groups(tmp_path, opened, redis_log_url, monkeypatch):
    api = api_process(opened, tmp_path, redis_log_url)
    log = api.logs[EVENTS.name]
    groups: list[int] = []
    real_write = StreamLog._write

    def counting_write(self, payloads):
        groups.append(len(payloads))
        real_write(self, payloads)

    monkeypatch.setattr(StreamLog, "_write", counting_write)

    async def send_all():
        await asyncio.gather(*(log.append(b'{"n":%d}\n' % n) for n in range(200)))

    asyncio.run(send_all())
    assert sum(groups) == 200 == stream_entries(redis_log_url)
    assert len(groups) < 100, groups


def test_a_re_sent_event_is_a_duplicate_on_another_api_process(tmp_path, opened, redis_log_url):
    first, second = api_process(opened, tmp_path, redis_log_url), api_process(opened, tmp_path, redis_log_url)
    assert first.accept_events_sync([event("e-1")], ctx()).duplicates == 0
    assert second.accept_events_sync([event("e-1"), event("e-2")], ctx()).duplicates == 1
    assert second.flush() == 2
    assert first.flush() == 0
    assert stored(tmp_path) == ["e-1", "e-2"]


def test_a_flush_that_died_before_acknowledging_is_read_again_and_stores_nothing_twice(
    tmp_path, opened, redis_log_url, monkeypatch
):
    api = api_process(opened, tmp_path, redis_log_url)
    api.accept_events_sync([event(f"e-{n}") for n in range(5)], ctx())
    flush_losing_the_acknowledgement(api, monkeypatch)
    assert stored(tmp_path) == [f"e-{n}" for n in range(5)]
    assert api.logs[EVENTS.name].pending() == 1
    # Another process (the flusher after a restart) reads the unacknowledged entry first.
    other = api_process(opened, tmp_path, redis_log_url)
    other.accept_events_sync([event("e-5")], ctx())
    assert other.flush() == 1
    assert stored(tmp_path) == [f"e-{n}" for n in range(6)]
    assert stream_entries(redis_log_url) == 0
    assert other.logs[EVENTS.name].pending() == 0


def test_a_failed_append_answers_an_os_error_and_claims_nothing(tmp_path, opened, redis_log_url, monkeypatch):
    api = api_process(opened, tmp_path, redis_log_url)

    def refused(self, payloads):
        raise LogWriteFailed("Redis did not take the append")

    monkeypatch.setattr(StreamLog, "_write", refused)
    with pytest.raises(OSError, match="did not take"):
        api.accept_events_sync([event("e-1")], ctx())
    monkeypatch.undo()
    assert api.accept_events_sync([event("e-1")], ctx()).duplicates == 0  # the retry is new
    assert api.flush() == 1


def test_orders_the_flusher_stored_are_duplicates_for_every_api_process(tmp_path, opened, redis_log_url):
    first, second = api_process(opened, tmp_path, redis_log_url), api_process(opened, tmp_path, redis_log_url)
    assert first.accept_orders_sync([order("o-1")], ctx()).duplicates == 0
    assert first.flush() == 1
    result = second.accept_orders_sync([order("o-1"), order("o-2")], ctx())
    assert (result.accepted, result.duplicates) == (2, 1)
    assert second.flush() == 1
    assert stored(tmp_path, ORDERS) == ["o-1", "o-2"]


def test_the_flusher_holds_the_data_directory(tmp_path, opened, redis_log_url):
    """API processes share the data directory; the one process flushing in the background owns it."""
    api_process(opened, tmp_path, redis_log_url)
    flusher = Ingest(data_dir=tmp_path, stream_url=redis_log_url, flush_in_background=True)
    opened.append(flusher)
    with pytest.raises(DataDirBusy):
        Ingest(data_dir=tmp_path, stream_url=redis_log_url, flush_in_background=True)
    api_process(opened, tmp_path, redis_log_url)


def test_the_background_flusher_replays_what_it_finds_on_start(tmp_path, opened, redis_log_url):
    api = api_process(opened, tmp_path, redis_log_url)
    api.accept_events_sync([event("e-1")], ctx())
    flusher = Ingest(data_dir=tmp_path, stream_url=redis_log_url, flush_in_background=True)
    opened.append(flusher)
    flusher.start()
    assert stored(tmp_path) == ["e-1"]


def test_a_re_send_after_an_append_whose_answer_was_lost_is_a_duplicate_stored_once(
    tmp_path, opened, redis_log_url, monkeypatch
):
    """Claims and the line are logged in one step: the ids claimed are exactly the ids logged."""
    api = api_process(opened, tmp_path, redis_log_url)
    real_write = StreamLog._write

    def answer_lost(self, items):
        real_write(self, items)
        raise LogWriteFailed("connection lost after the write")

    monkeypatch.setattr(StreamLog, "_write", answer_lost)
    with pytest.raises(OSError, match="connection lost"):
        api.accept_events_sync([event("e-1"), event("e-2")], ctx())
    monkeypatch.undo()
    assert api.accept_events_sync([event("e-1"), event("e-2")], ctx()).duplicates == 2
    assert stream_entries(redis_log_url) == 1
    assert api.flush() == 2
    assert stored(tmp_path) == ["e-1", "e-2"]


def test_a_batch_without_a_valid_event_logs_nothing(tmp_path, opened, redis_log_url):
    api = api_process(opened, tmp_path, redis_log_url)
    result = api.accept_events_sync([{**event("e-1"), "name": "bogus"}], ctx())
    assert (result.accepted, [r.index for r in result.rejected]) == (0, [0])
    assert asyncio.run(api.accept_events([], ctx())).accepted == 0
    assert stream_entries(redis_log_url) == 0


def test_a_redis_log_feeds_one_data_directory(tmp_path, opened, redis_log_url):
    """A process pointed at another data directory would move this install's rows into its lake."""
    api = api_process(opened, tmp_path / "shared", redis_log_url)
    api.accept_events_sync([event("e-1")], ctx())
    with pytest.raises(
        LogOfAnotherDataDir, match="every process of an install needs the same AISLE_DATA_DIR"
    ):
        Ingest(data_dir=tmp_path / "typo", stream_url=redis_log_url, flush_in_background=True)
    assert stream_entries(redis_log_url) == 1
    api_process(opened, tmp_path / "shared", redis_log_url).flush()
    assert stored(tmp_path / "shared") == ["e-1"]


def test_a_flush_knows_what_another_process_flushed(tmp_path, opened, redis_log_url):
    """A line holding ids another process's flush already wrote (a partly re-sent batch) stores only
    the new ones, though this flusher never saw the first copy."""
    first, second = api_process(opened, tmp_path, redis_log_url), api_process(opened, tmp_path, redis_log_url)
    first.accept_events_sync([event("e-0")], ctx())
    assert first.flush() == 1  # its window of the lake is loaded now
    first.accept_events_sync([event("e-1")], ctx())
    assert second.flush() == 1
    first.accept_events_sync([event("e-1"), event("e-2")], ctx())  # logged with a mask: e-2 is new
    [(_, fields)] = redis.Redis.from_url(redis_log_url).xrange(stream_key(EVENTS.name))
    assert fields[b"m"] == b"01"
    assert first.flush() == 1
    assert stored(tmp_path) == ["e-0", "e-1", "e-2"]


def test_an_order_another_process_imported_is_a_duplicate(tmp_path, opened, redis_log_url):
    importer, server = (
        api_process(opened, tmp_path, redis_log_url),
        api_process(opened, tmp_path, redis_log_url),
    )
    importer.accept_orders_sync([order("o-1")], ctx())
    importer.flush()
    assert not asyncio.run(server.store_new_order(server.order(order("o-1"), ctx()), SITE))
    assert asyncio.run(server.store_new_order(server.order(order("o-2"), ctx()), SITE))


def test_an_order_is_claimed_by_the_script_that_logs_it_so_racing_processes_acknowledge_it_once(
    tmp_path, opened, redis_log_url
):
    """Two servers and an import taking the same order ids at once: each id acknowledged once, by
    whoever logged it (found by a black-box check: an import and the routes both acknowledged; a
    server dying between its claim and its append left the claim, and every re-send answered 409
    for an order stored nowhere)."""
    processes = [api_process(opened, tmp_path, redis_log_url) for _ in range(3)]
    ids = [f"o-{i}" for i in range(40)]

    def routes(process) -> list[str]:
        return [i for i in ids if asyncio.run(process.store_new_order(process.order(order(i), ctx()), SITE))]

    def imports(process) -> list[str]:
        stored: list[dict] = []
        process.accept_orders_sync([order(i) for i in ids], ctx(), stored=stored)
        return [row["order_id"] for row in stored]

    with ThreadPoolExecutor(3) as pool:
        taken = [f.result() for f in [pool.submit(routes, processes[0]), pool.submit(routes, processes[1]),
                                      pool.submit(imports, processes[2])]]  # fmt: skip
    assert sorted(i for acknowledged in taken for i in acknowledged) == sorted(ids)
    processes[0].flush()
    assert sorted(
        r[0]
        for r in duckdb.sql(
            f"SELECT order_id FROM read_parquet('{tmp_path}/lake/orders/*/*/*.parquet')"
        ).fetchall()
    ) == sorted(ids)


def test_the_lake_writer_first_flushes_what_a_file_log_still_holds(tmp_path, redis_log_url):
    """An install that moves from the file log to Redis loses none of what the file log acknowledged."""
    file_server = Ingest(data_dir=tmp_path)  # never started: nothing of its log was flushed
    file_server.accept_events_sync([event("e-1"), event("e-2")], ctx())
    file_server.stop()
    assert stored(tmp_path) == []
    settings = Settings(data_dir=tmp_path, redis_url=redis_log_url, durable_log="redis")
    stop = threading.Event()
    stop.set()  # start, then stop at once
    lake_writer.run(settings, stop)
    assert stored(tmp_path) == ["e-1", "e-2"]
    assert flush_file_log(tmp_path) == 0


def test_a_replay_checks_the_lake_as_it_is_now_not_as_this_process_loaded_it(
    tmp_path, opened, redis_log_url, monkeypatch
):
    first, second = api_process(opened, tmp_path, redis_log_url), api_process(opened, tmp_path, redis_log_url)
    # The second process replays once, and so loads the lake's keys as they were then.
    second.accept_events_sync([event("e-0")], ctx())
    flush_losing_the_acknowledgement(second, monkeypatch)
    assert second.flush() == 0
    # The first process writes e-1 and dies before acknowledging; the second replays that entry.
    first.accept_events_sync([event("e-1")], ctx())
    flush_losing_the_acknowledgement(first, monkeypatch)
    assert second.flush() == 0
    assert stored(tmp_path) == ["e-0", "e-1"]


def test_a_redis_new_to_the_data_directory_learns_what_the_lake_received(tmp_path, opened, redis_log_url):
    """An install moving from the file log (or given a new Redis): re-sends of rows the lake holds
    stay duplicates (found by a black-box check: they were stored twice)."""
    file_server = Ingest(data_dir=tmp_path)
    file_server.accept_events_sync([event("e-1"), event("e-2")], ctx())
    file_server.accept_orders_sync([order("o-1")], ctx())
    file_server.flush()
    file_server.stop()
    api = api_process(opened, tmp_path, redis_log_url)
    assert api.accept_events_sync([event("e-1"), event("e-3")], ctx()).duplicates == 1
    assert api.accept_orders_sync([order("o-1")], ctx()).duplicates == 1
    assert api.flush() == 1
    assert stored(tmp_path) == ["e-1", "e-2", "e-3"]


def test_a_consent_re_sent_before_its_flush_is_a_duplicate_on_either_log(tmp_path, opened, redis_log_url):
    record = {"consentId": "c-1", "visitorId": "v-1", "categories": {"analytics": True}}
    file_log = Ingest(data_dir=tmp_path / "file", flush_interval_seconds=3600)
    opened.append(file_log)
    for service in (file_log, api_process(opened, tmp_path / "redis", redis_log_url)):
        assert asyncio.run(service.accept_consent(record, ctx()))[1] is False
        assert asyncio.run(service.accept_consent(record, ctx()))[1] is True  # not yet flushed
        assert service.flush() == 1
        assert asyncio.run(service.accept_consent(record, ctx()))[1] is True
        assert service.flush() == 0


# --- the lake writer's lease: one `aisle flush` per Redis log -----------------------------------------


def test_a_second_lake_writer_waits_for_the_lease_and_is_refused_while_it_is_renewed(redis_log_url):
    client = lambda: redis.Redis.from_url(redis_log_url, socket_timeout=3)  # noqa: E731
    first = WriterLease(client(), ttl_seconds=2)
    first.acquire()
    try:
        with pytest.raises(LakeWriterBusy, match="another `aisle flush`"):
            WriterLease(client(), ttl_seconds=2).acquire(wait_seconds=3)  # renewed meanwhile
    finally:
        first.release()
    second = WriterLease(client(), ttl_seconds=2)
    second.acquire(wait_seconds=0)  # released: at once
    second.release()


def test_a_writer_waiting_for_the_lease_stops_when_told_to(redis_log_url):
    """A SIGTERM to an `aisle flush` waiting for a killed writer's lease waited it out, up to 20 s,
    then flushed once (a black-box check)."""
    client = lambda: redis.Redis.from_url(redis_log_url, socket_timeout=3)  # noqa: E731
    holder = WriterLease(client(), ttl_seconds=30)
    holder.acquire()
    try:
        stop = threading.Event()
        threading.Timer(0.5, stop.set).start()
        began = time.monotonic()
        waiting = WriterLease(client(), ttl_seconds=30)
        assert waiting.acquire(wait_seconds=60, stop=stop) is False
        assert time.monotonic() - began < 3
        assert redis.Redis.from_url(redis_log_url).get("aisle:log:lake-writer").decode() == holder.holder
    finally:
        holder.release()


def test_a_writer_killed_lets_the_next_in_and_then_knows_it_lost_the_lease(redis_log_url):
    client = lambda: redis.Redis.from_url(redis_log_url, socket_timeout=3)  # noqa: E731
    dead = WriterLease(client(), ttl_seconds=1)
    dead.acquire()
    dead._stop.set()  # as kill -9 would: no renewal, no release
    dead._thread.join()
    successor = WriterLease(client(), ttl_seconds=1)
    successor.acquire(wait_seconds=5)
    try:
        dead._stop.clear()
        threading.Thread(target=dead._renew, daemon=True).start()  # it wakes up again
        assert dead.lost.wait(5)
        assert redis.Redis.from_url(redis_log_url).get("aisle:log:lake-writer").decode() == successor.holder
    finally:
        dead._stop.set()
        successor.release()


def test_a_lease_that_ran_out_while_redis_was_away_is_taken_back_when_nobody_else_took_it(redis_log_url):
    """A Redis stall longer than the lease's time to live stopped the only writer for good, blaming
    "another" writer that was itself (a black-box check)."""
    lease = WriterLease(redis.Redis.from_url(redis_log_url, socket_timeout=3), ttl_seconds=1)
    lease.acquire()
    try:
        redis.Redis.from_url(redis_log_url).delete("aisle:log:lake-writer")  # expired meanwhile
        time.sleep(1.5)  # a renewal or two
        assert not lease.lost.is_set()
        assert redis.Redis.from_url(redis_log_url).get("aisle:log:lake-writer").decode() == lease.holder
    finally:
        lease.release()


def test_a_lake_writer_refused_by_the_lease_takes_nothing_from_the_log(tmp_path, redis_log_url, monkeypatch):
    """A second `aisle flush` (another machine mounting the same directory) waits for the lease and,
    refused, has taken nothing from the log."""
    data_dir = tmp_path / "data"
    server = Ingest(data_dir=data_dir, stream_url=redis_log_url, flush_in_background=False)
    presence = ReaderPresence(redis.Redis.from_url(redis_log_url), data_dir)  # as `aisle serve` runs
    presence.start()
    server.accept_events_sync([event("e-1")], ctx())
    monkeypatch.setattr(writer_lease, "TTL_SECONDS", 1)
    holder = WriterLease(redis.Redis.from_url(redis_log_url, socket_timeout=3))
    holder.acquire()  # the `aisle flush` that writes
    try:
        with pytest.raises(LakeWriterBusy):
            lake_writer.run(
                Settings(data_dir=data_dir, redis_url=redis_log_url, durable_log="redis"), threading.Event()
            )
    finally:
        holder.release()
        presence.stop()
        server.stop()
    assert stored(data_dir) == []
    assert redis.Redis.from_url(redis_log_url).xlen(stream_key(EVENTS.name)) == 1
