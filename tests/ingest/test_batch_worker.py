"""Event batches prepared by worker processes: the same lines and answers as the server's own path,
the in-process path whenever a worker cannot answer, and no worker outliving its server."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pytest

from ingest.batch_worker import BatchWorkers, PreparedBatch
from ingest.event_lines import encode_event_batch, without_events
from ingest.events import parse_event_batch, valid_event_log_columns
from ingest.service import Ingest
from ingest.validation import Context, Rejected, common_columns

# Starts, loses and replaces worker processes.
pytestmark = pytest.mark.slow

SITE = "11111111-1111-1111-1111-111111111111"
RECEIVED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def ctx(**fields) -> Context:
    base = {"site_id": SITE, "site_currency": "GBP", "received_at": RECEIVED, "channel": "web",
            "client_platform": "web", "client_version": "1.2.0"}  # fmt: skip
    return Context(**{**base, **fields})


def event(event_id: str, **fields) -> dict:
    return {"name": "page_view", "eventId": event_id, "visitorId": "v-1", "sessionId": "s-1", **fields}


def body(*events: dict, **fields) -> bytes:
    return orjson.dumps({"events": list(events), **fields})


def in_process_line(raw: bytes, context: Context) -> tuple[bytes, list[tuple[int, str, str]]]:
    batch = parse_event_batch(raw)
    context = Context(**{**context.__dict__, "sent_at": batch.sent_at})
    columns, failures = valid_event_log_columns(batch.events, context)
    return encode_event_batch(common_columns(context), columns), [(i, e.code, e.reason) for i, e in failures]


def prepared_by_a_worker(
    *raws: bytes, count: int = 1, context: Context | None = None
) -> list[PreparedBatch | None]:
    async def main():
        workers = BatchWorkers(count)
        await workers.start()
        try:
            return [await workers.prepare(raw, context or ctx()) for raw in raws]
        finally:
            await workers.stop()

    return asyncio.run(main())


def test_a_worker_prepares_the_line_the_server_would_write():
    raws = [
        body(
            event(
                "e-1",
                timestamp="2024-05-01T11:59:00Z",
                metadata={"productItemCode": "SKU-1"},
                name="product_view",
            ),
            event("e-2", name="add_to_cart"),  # no product code: rejected by index
            event("e-3", currency="usd", value="19.99", url="https://shop.example.com/x"),
            sentAt="2024-05-01T11:59:30Z",
        ),
        body(event("e-4", visitorId="v-2")),
    ]
    first, second = prepared_by_a_worker(*raws, count=2)
    line, failures = in_process_line(raws[0], ctx())
    assert first.line == line
    assert first.event_ids == ["e-1", "e-3"]
    assert first.visitors == ["v-1"]
    assert (
        [(i, e.code, e.reason) for i, e in first.failures]
        == failures
        == [(1, "MISSING_PRODUCT_CODE", "'add_to_cart' needs metadata.productItemCode")]
    )
    assert second.line == in_process_line(raws[1], ctx())[0]
    assert second.visitors == ["v-2"]


def test_bodies_the_fast_path_does_not_take_whole_are_left_to_the_server():
    not_taken = [
        body(event("e-1", name="page_vieww")),  # reported by index on the per-event path
        b'{"events": [',  # malformed JSON: a 400 from the per-event path
        body(event("e-1", value=19.99)),  # a JSON fraction pydantic reads through a float
    ]
    assert prepared_by_a_worker(*not_taken) == [None, None, None]


def test_a_batch_with_no_event_kept_has_no_line():
    [prepared] = prepared_by_a_worker(body(event("e-1", name="add_to_cart")))
    assert prepared.event_ids == [] and prepared.line == b""
    assert [e.code for _, e in prepared.failures] == ["MISSING_PRODUCT_CODE"]


def test_without_events_keeps_the_marked_events_and_their_single_values():
    line, _ = in_process_line(body(event("e-1"), event("e-2", url="u-2"), event("e-3", url="u-3")), ctx())
    kept = orjson.loads(without_events(line, [True, False, True]))
    assert kept["c"]["event_id"] == ["e-1", "e-3"]
    assert kept["c"]["url"] == [None, "u-3"]
    assert kept["s"] == orjson.loads(line)["s"]
    assert without_events(line, [False, False, False]) is None


def test_re_sent_prepared_events_are_stored_once(tmp_path: Path):
    service = Ingest(data_dir=tmp_path, flush_interval_seconds=3600)
    service.start()
    try:
        first, again = prepared_by_a_worker(
            body(event("e-1"), event("e-2")), body(event("e-2"), event("e-3"))
        )
        one = asyncio.run(service.accept_prepared_events(first, SITE))
        two = asyncio.run(service.accept_prepared_events(again, SITE))
        assert (one.accepted, one.duplicates) == (2, 0)
        assert (two.accepted, two.duplicates) == (2, 1)  # accepted counts the valid events, re-sent ones too
        assert service.flush() == 3
        files = sorted((tmp_path / "lake" / "events").glob("*/*/*.parquet"))
        listing = ", ".join(f"'{f}'" for f in files)
        assert duckdb.sql(
            f"SELECT event_id, client_version FROM read_parquet([{listing}]) ORDER BY 1"
        ).fetchall() == [
            ("e-1", "1.2.0"),
            ("e-2", "1.2.0"),
            ("e-3", "1.2.0"),
        ]
    finally:
        service.stop()


def test_a_lost_worker_leaves_its_bodies_to_the_server_and_is_replaced(monkeypatch):
    monkeypatch.setattr("ingest.batch_worker.RESPAWN_DELAY_SECONDS", 0.1)

    async def main():
        workers = BatchWorkers(1)
        await workers.start()
        try:
            assert workers.ready == 1  # started means ready: the server answers only then
            [pid] = workers.pids
            os.kill(pid, signal.SIGKILL)
            assert await workers.prepare(body(event("e-1")), ctx()) is None
            for _ in range(400):
                if workers.ready and workers.pids != [pid]:
                    break
                await asyncio.sleep(0.05)
            assert workers.ready and workers.pids != [pid]
            prepared = await workers.prepare(body(event("e-2")), ctx())
            assert prepared is not None and prepared.event_ids == ["e-2"]
        finally:
            await workers.stop()

    asyncio.run(main())


def test_a_stuck_worker_is_given_up_on_and_replaced(monkeypatch):
    monkeypatch.setattr("ingest.batch_worker.RESPAWN_DELAY_SECONDS", 0.1)
    monkeypatch.setattr("ingest.batch_worker.ANSWER_TIMEOUT_SECONDS", 0.5)

    async def main():
        workers = BatchWorkers(1)
        await workers.start()
        try:
            [pid] = workers.pids
            os.kill(pid, signal.SIGSTOP)
            began = time.monotonic()
            # More than its socket holds: the bodies it never reads must not keep it from being closed.
            big = body(*(event(f"big-{i}", url="https://shop.example.com/" + "x" * 2000) for i in range(400)))
            answers = await asyncio.gather(
                *(workers.prepare(raw, ctx()) for raw in [big] * 4 + [body(event("e-1"))])
            )
            assert answers == [None] * 5
            assert time.monotonic() - began < 5
            for _ in range(400):
                if workers.ready and workers.pids != [pid]:
                    break
                await asyncio.sleep(0.05)
            monkeypatch.setattr(
                "ingest.batch_worker.ANSWER_TIMEOUT_SECONDS", 60
            )  # the new one may still be starting
            assert (await workers.prepare(body(event("e-2")), ctx())).event_ids == ["e-2"]
        finally:
            await workers.stop()

    asyncio.run(main())


def test_a_worker_exits_when_its_server_is_gone():
    ours, theirs = socket.socketpair()
    with theirs:
        worker = subprocess.Popen(
            [sys.executable, "-m", "ingest.batch_worker", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            cwd=ROOT,
        )
    try:
        time.sleep(0.5)
        assert worker.poll() is None
        ours.close()  # what a kill -9 of the server does to its end
        assert worker.wait(timeout=10) == 0
    finally:
        if worker.poll() is None:
            worker.kill()


def test_rejections_keep_their_codes_across_the_process_boundary():
    [prepared] = prepared_by_a_worker(body(event("e-1", currency="XYZ"), event("e-2")))
    [(index, rejected)] = prepared.failures
    assert index == 0 and isinstance(rejected, Rejected)
    assert rejected.code == "CURRENCY_NOT_ISO4217"
    assert prepared.event_ids == ["e-2"]


def test_no_workers_means_every_body_stays_in_process():
    assert prepared_by_a_worker(body(event("e-1")), count=0) == [None]
