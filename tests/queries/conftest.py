from __future__ import annotations

import pytest

from ingest.service import Ingest
from warehouse.engine import Engine


@pytest.fixture
def lake(tmp_path):
    """An ingest service (flushed by hand) and an engine over the same fresh lake."""
    ingest = Ingest(data_dir=tmp_path / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    yield ingest, engine
    engine.close()
    ingest.stop()
