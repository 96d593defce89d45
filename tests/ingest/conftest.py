from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest.service import Ingest


@pytest.fixture
def opened() -> Iterator[list[Ingest]]:
    """Ingest services a test opens, stopped after it."""
    services: list[Ingest] = []
    yield services
    for service in services:
        service.stop()
