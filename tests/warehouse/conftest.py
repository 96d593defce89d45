from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from warehouse.config_store.store import create_store_engine, migrate


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path: Path) -> Iterator[Engine]:
    """A migrated config store on SQLite and, in a second run, on the test PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'catalog' / 'aisle.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    engine = create_store_engine(url)
    migrate(engine)
    yield engine
    engine.dispose()
