from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow.parquet as pq

from ingest.service import Ingest
from ingest.validation import Context
from jobs import compaction
from jobs.scheduler import start_scheduler
from warehouse import visitor_activity
from warehouse.lake import EVENTS


def test_compact_lake_compacts_every_table(tmp_path):
    ingest = Ingest(data_dir=tmp_path / "data", flush_interval_seconds=3600)
    ctx = Context(site_id="s1", site_currency="EUR", received_at=datetime.now(UTC), channel="server")
    try:
        for number in range(3):
            ingest.accept_events_sync([{"name": "scroll", "visitorId": "v", "sessionId": "s",
                                        "eventId": f"e{number}"}], ctx)  # fmt: skip
            ingest.flush()
        results = compaction.compact_lake(ingest)
        assert results["events"].files_in == 3
        assert results["orders"].partitions == 0
        assert len(ingest.lake.files(EVENTS)) == 1
    finally:
        ingest.stop()


def test_the_scheduler_runs_compaction_on_an_interval(tmp_path):
    ingest = Ingest(data_dir=tmp_path / "data", flush_interval_seconds=3600)
    scheduler = start_scheduler(ingest=ingest, compaction_interval_seconds=600)
    try:
        job = scheduler.get_job(compaction.JOB_ID)
        assert job.func is compaction.compact_lake
        assert job.trigger.interval.total_seconds() == 600
    finally:
        scheduler.shutdown()
        ingest.stop()


def test_compact_lake_then_rolls_up_ended_months_in_each_sites_time_zone(lake):
    ingest, engine = lake
    ctx = Context(site_id="s1", site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    for number in range(2):
        ingest.accept_events_sync([{"name": "page_view", "visitorId": "v", "sessionId": "s",
                                    "eventId": f"e{number}", "timestamp": "2024-01-31T23:30:00Z"}], ctx)  # fmt: skip
        ingest.flush()
    compaction.compact_lake(ingest, engine, lambda: {"s1": "Asia/Tokyo"})
    # 23:30 UTC on Jan 31 is February 1 in Tokyo: the UTC day's partition holds the end of January
    # (no event) and the start of February, both rolled up after compaction.
    january, february = visitor_activity.current(ingest.lake, "s1", "Asia/Tokyo", until=datetime.now(UTC))
    assert (january.month, february.month) == (date(2024, 1, 1), date(2024, 2, 1))
    assert (pq.read_metadata(january.file).num_rows, pq.read_metadata(february.file).num_rows) == (0, 2)
    assert len(ingest.lake.files(EVENTS)) == 1
