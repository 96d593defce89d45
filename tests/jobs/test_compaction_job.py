from __future__ import annotations

from datetime import UTC, datetime

from ingest.normalise import Context
from ingest.service import Ingest
from jobs import compaction
from jobs.scheduler import start_scheduler
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
