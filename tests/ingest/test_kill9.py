"""Durability: a 2xx means the events survive `kill -9` of the server and are stored exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import httpx
import pytest

from tests.kill9_support import prepare_site
from tests.servers import free_port

# Kills real server processes.
pytestmark = pytest.mark.slow

AISLE = str(Path(sys.executable).parent / "aisle")


def start_server(data_dir: Path, port: int, **settings: str) -> subprocess.Popen:
    """``settings``: more AISLE_ settings, by name (``redis_url=...``)."""
    env = {**os.environ, "AISLE_DATA_DIR": str(data_dir), "AISLE_VISITOR_BATCHES_PER_MINUTE": "100000",
           **{f"AISLE_{name.upper()}": value for name, value in settings.items()}}  # fmt: skip
    process = subprocess.Popen(
        [AISLE, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("aisle serve did not come up")


def batch(worker: int, number: int) -> list[dict]:
    return [
        {
            "name": "page_view",
            "eventId": f"w{worker}-b{number}-e{i}",
            "visitorId": f"v{worker}",
            "sessionId": "s1",
        }
        for i in range(50)
    ]


def stored_event_ids(data_dir: Path) -> list[str]:
    files = list((data_dir / "lake" / "events").glob("*/*/*.parquet"))
    if not files:
        return []
    glob = str(data_dir / "lake" / "events" / "*" / "*" / "*.parquet")
    return [row[0] for row in duckdb.sql(f"SELECT event_id FROM read_parquet('{glob}')").fetchall()]


class Load:
    """Workers sending batches of 50 to some servers' events route, round robin, until stopped; the
    ids of every batch answered 200 are ``acknowledged``."""

    def __init__(self, site_key: str, ports: list[int], workers: int = 4) -> None:
        self.urls = [f"http://127.0.0.1:{port}/api/v1/public/sites/{site_key}/events/batch" for port in ports]
        self.acknowledged: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._workers = [threading.Thread(target=self._send, args=(w,)) for w in range(workers)]

    def _send(self, worker: int) -> None:
        with httpx.Client(headers={"Origin": "https://shop.example.com"}, timeout=5) as client:
            number = 0
            while not self._stop.is_set():
                events = batch(worker, number)
                url = self.urls[number % len(self.urls)]
                number += 1
                try:
                    response = client.post(url, json={"events": events})
                except httpx.HTTPError:
                    return  # the server died under us; this batch was never acknowledged
                if response.status_code == 200:
                    assert response.json()["accepted"] == 50
                    with self._lock:
                        self.acknowledged.update(e["eventId"] for e in events)

    def start(self) -> None:
        for worker in self._workers:
            worker.start()

    def wait_for(self, events: int, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.acknowledged) >= events:
                    return
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=10)


def assert_stored_exactly_once(data_dir: Path, acknowledged: set[str]) -> None:
    stored = stored_event_ids(data_dir)
    assert len(stored) == len(set(stored)), "an event was stored twice"
    missing = acknowledged - set(stored)
    assert not missing, f"{len(missing)} acknowledged events were lost"


def test_acknowledged_events_survive_kill_9_exactly_once(tmp_path):
    data_dir = tmp_path / "data"
    site_key = prepare_site(data_dir)
    port = free_port()
    server = start_server(data_dir, port)
    load = Load(site_key, [port])
    try:
        load.start()
        load.wait_for(5000)
        server.send_signal(signal.SIGKILL)  # in the middle of the load
        server.wait(timeout=10)
        load.stop()
    finally:
        if server.poll() is None:
            server.kill()

    assert len(load.acknowledged) >= 5000
    # Restart: the log beyond the checkpoint is replayed into the lake before serving.
    server = start_server(data_dir, port)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    assert_stored_exactly_once(data_dir, load.acknowledged)


def test_a_torn_log_tail_is_dropped_and_the_rest_replayed(tmp_path):
    data_dir = tmp_path / "data"
    site_key = prepare_site(data_dir)
    port = free_port()
    server = start_server(data_dir, port)
    try:
        response = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/public/sites/{site_key}/events/batch",
            json={"events": batch(0, 0)},
            headers={"Origin": "https://shop.example.com"},
        )
        assert response.status_code == 200
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
    # A half-written record, as a crash in the middle of a write would leave it.
    segment = sorted((data_dir / "log" / "events").glob("*.log"))[-1]
    with open(segment, "ab") as handle:
        handle.write(b'{"event_id": "torn", "name": "page_vi')
    server = start_server(data_dir, port)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    stored = stored_event_ids(data_dir)
    assert sorted(stored) == sorted(e["eventId"] for e in batch(0, 0))
