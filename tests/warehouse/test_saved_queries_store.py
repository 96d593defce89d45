"""The saved queries repository on both config store backends: the fixed verbs, JSON parameters,
one name per site, aware timestamps, and the cascade from sites."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.factories import make_store_site
from warehouse.config_store import saved_queries, sites

PARAMETERS = [
    {"name": "since", "type": "date", "required": False, "default": "2024-01-01", "description": None}
]


def make_query(conn, site_id: str, name: str = "Daily views") -> dict:
    return saved_queries.create(
        conn, site_id=site_id, name=name, query="SELECT count(*) FROM events WHERE date >= $since",
        dialect="duckdb", parameters=PARAMETERS, description="D", created_by="user-1",
    )  # fmt: skip


def test_create_get_round_trip(store):
    with store.begin() as conn:
        created = make_query(conn, make_store_site(conn)["id"])
    with store.connect() as conn:
        fetched = saved_queries.get(conn, query_id=created["id"])
        assert saved_queries.get(conn, query_id="no-such-id") is None
    assert fetched == created
    assert fetched["parameters"] == PARAMETERS
    assert (fetched["dialect"], fetched["created_by"]) == ("duckdb", "user-1")
    assert fetched["created_at"].utcoffset() == timedelta(0)


def test_list_is_per_site_by_name(store):
    with store.begin() as conn:
        site, other = make_store_site(conn), make_store_site(conn)
        second = make_query(conn, site["id"], "b")
        first = make_query(conn, site["id"], "a")
        make_query(conn, other["id"], "elsewhere")
    with store.connect() as conn:
        assert saved_queries.list(conn, site_id=site["id"]) == [first, second]
        assert [q["name"] for q in saved_queries.list(conn, site_id=other["id"])] == ["elsewhere"]


def test_a_name_is_taken_once_per_site(store):
    with store.begin() as conn:
        site, other = make_store_site(conn), make_store_site(conn)
        kept = make_query(conn, site["id"], "same")
        make_query(conn, other["id"], "same")  # another site may use it
        with pytest.raises(saved_queries.NameTaken):
            make_query(conn, site["id"], "same")
        renamed = make_query(conn, site["id"], "other")
        with pytest.raises(saved_queries.NameTaken):
            saved_queries.update(conn, query_id=renamed["id"], name="same")
        # The failed statements left the transaction usable.
        assert [q["name"] for q in saved_queries.list(conn, site_id=site["id"])] == ["other", "same"]
    with store.connect() as conn:
        assert saved_queries.get(conn, query_id=kept["id"])["name"] == "same"


def test_update_changes_the_given_fields_and_the_update_time(store):
    with store.begin() as conn:
        created = make_query(conn, make_store_site(conn)["id"])
    with store.begin() as conn:
        updated = saved_queries.update(
            conn, query_id=created["id"], name="Renamed", query="SELECT 1", dialect="postgres", parameters=[],
            description=None,
        )  # fmt: skip
    assert {k: updated[k] for k in ("name", "query", "dialect", "parameters", "description")} == {
        "name": "Renamed", "query": "SELECT 1", "dialect": "postgres", "parameters": [], "description": None,
    }  # fmt: skip
    assert updated["updated_at"] >= created["updated_at"]
    assert updated["created_at"] == created["created_at"]
    with store.begin() as conn:
        with pytest.raises(ValueError, match="site_id"):
            saved_queries.update(conn, query_id=created["id"], site_id="other")
        assert saved_queries.update(conn, query_id="no-such-id", name="x") is None


def test_delete_and_the_cascade_from_sites(store):
    with store.begin() as conn:
        site = make_store_site(conn)
        removed, kept = make_query(conn, site["id"], "a"), make_query(conn, site["id"], "b")
    with store.begin() as conn:
        assert saved_queries.delete(conn, query_id=removed["id"]) is True
        assert saved_queries.delete(conn, query_id=removed["id"]) is False
    with store.begin() as conn:
        assert saved_queries.list(conn, site_id=site["id"]) == [kept]
        sites.delete_one(conn, site_id=site["id"])
    with store.connect() as conn:
        assert saved_queries.get(conn, query_id=kept["id"]) is None
