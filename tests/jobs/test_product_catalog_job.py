"""The product-catalog job: every site's catalog learns the products its events name, on the
scheduler's clock and when a flush by hand returns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.validation import Context
from jobs import product_catalog
from jobs.scheduler import start_scheduler
from tests.factories import make_store_site
from warehouse.config_store import products
from warehouse.config_store.store import create_store_engine, migrate


@pytest.fixture
def two_shops(lake, tmp_path):
    """(ingest, engine, store, sites): a lake and a config store with two sites."""
    ingest, engine = lake
    store = create_store_engine(f"sqlite:///{tmp_path / 'store.db'}")
    migrate(store)
    with store.begin() as conn:
        shops = [make_store_site(conn), make_store_site(conn)]
    yield ingest, engine, store, shops
    store.dispose()


def view(ingest, site: dict, code: str) -> None:
    ctx = Context(site_id=site["id"], site_currency="EUR", received_at=datetime.now(UTC), channel="server")
    event = {
        "name": "product_view",
        "visitorId": "v",
        "sessionId": "s",
        "metadata": {"productItemCode": code},
    }
    assert ingest.accept_events_sync([event], ctx).rejected == []


def codes(store, site: dict) -> list[str]:
    with store.connect() as conn:
        return [row["product_item_code"] for row in products.list(conn, site_id=site["id"]).rows]


def test_the_job_merges_what_each_site_saw_since_its_last_run(two_shops):
    ingest, engine, store, (first, second) = two_shops
    view(ingest, first, "A")
    view(ingest, second, "B")
    ingest.flush()
    assert product_catalog.sync_product_catalogs(store, engine) == {first["id"]: 1, second["id"]: 1}
    assert product_catalog.sync_product_catalogs(store, engine) == {first["id"]: 0, second["id"]: 0}
    assert (codes(store, first), codes(store, second)) == (["A"], ["B"])


def test_the_scheduler_runs_the_job_on_an_interval_and_after_every_flush_by_hand(two_shops):
    ingest, engine, store, (first, _) = two_shops
    scheduler = start_scheduler(
        ingest=ingest,
        compaction_interval_seconds=600,
        engine=engine,
        store=store,
        catalog_interval_seconds=3600,
    )
    try:
        job = scheduler.get_job(product_catalog.JOB_ID)
        assert job.func is product_catalog.sync_product_catalogs
        assert job.trigger.interval.total_seconds() == 3600
        view(ingest, first, "A")
        ingest.flush()
        # In the catalog as the flush returns, not at the job's next turn.
        assert codes(store, first) == ["A"]
    finally:
        scheduler.shutdown()
    # Once the scheduler is shut down (the server stopping), flushes leave the catalogs alone.
    view(ingest, first, "B")
    ingest.flush()
    assert codes(store, first) == ["A"]


def test_without_a_config_store_the_scheduler_keeps_no_catalog(lake):
    ingest, engine = lake
    scheduler = start_scheduler(ingest=ingest, compaction_interval_seconds=600, engine=engine)
    try:
        assert scheduler.get_job(product_catalog.JOB_ID) is None
    finally:
        scheduler.shutdown()
