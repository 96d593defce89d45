"""The funnel definitions repository on both config store backends: the fixed verbs, JSON steps,
aware timestamps, and the cascade from sites."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.factories import make_store_site
from warehouse.config_store import funnel_definitions, sites


def make_definition(conn, site_id: str, name: str = "Checkout") -> dict:
    return funnel_definitions.create(
        conn, site_id=site_id, name=name, steps=["page_view", "add_to_cart", "page_view"],
        window_seconds=3600, order="strict", description="D", created_by="user-1",
    )  # fmt: skip


def test_create_get_round_trip(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        created = make_definition(conn, site["id"])
    with store.connect() as conn:
        fetched = funnel_definitions.get(conn, definition_id=created["id"])
    assert fetched == created
    assert fetched["steps"] == ["page_view", "add_to_cart", "page_view"]
    assert (fetched["order"], fetched["window_seconds"], fetched["created_by"]) == ("strict", 3600, "user-1")
    assert fetched["created_at"].utcoffset() == timedelta(0)
    with store.connect() as conn:
        assert funnel_definitions.get(conn, definition_id="no-such-id") is None


def test_list_is_per_site_oldest_first(store):
    with store.begin() as conn:
        site, other = make_store_site(conn), make_store_site(conn)
        first = make_definition(conn, site["id"], "First")
        second = make_definition(conn, site["id"], "Second")
        make_definition(conn, other["id"], "Elsewhere")
    with store.connect() as conn:
        assert funnel_definitions.list(conn, site_id=site["id"]) == [first, second]
        assert [d["name"] for d in funnel_definitions.list(conn, site_id=other["id"])] == ["Elsewhere"]


def test_update_changes_the_given_fields_and_the_update_time(store):
    with store.begin() as conn:
        created = make_definition(conn, make_store_site(conn)["id"])
    with store.begin() as conn:
        updated = funnel_definitions.update(
            conn, definition_id=created["id"], name="Renamed", steps=["scroll", "click"], order="any",
            description=None,
        )  # fmt: skip
    assert {k: updated[k] for k in ("name", "steps", "order", "description", "window_seconds")} == {
        "name": "Renamed", "steps": ["scroll", "click"], "order": "any", "description": None, "window_seconds": 3600,
    }  # fmt: skip
    assert updated["updated_at"] >= created["updated_at"]
    assert updated["created_at"] == created["created_at"]
    with store.begin() as conn:
        with pytest.raises(ValueError, match="site_id"):
            funnel_definitions.update(conn, definition_id=created["id"], site_id="other")
        assert funnel_definitions.update(conn, definition_id="no-such-id", name="x") is None


def test_delete_and_the_cascade_from_sites(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        removed, kept = make_definition(conn, site["id"]), make_definition(conn, site["id"])
    with store.begin() as conn:
        assert funnel_definitions.delete(conn, definition_id=removed["id"]) is True
        assert funnel_definitions.delete(conn, definition_id=removed["id"]) is False
    with store.begin() as conn:
        assert funnel_definitions.list(conn, site_id=site["id"]) == [kept]
        sites.delete_one(conn, site_id=site["id"])
    with store.connect() as conn:
        assert funnel_definitions.get(conn, definition_id=kept["id"]) is None
