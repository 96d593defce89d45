"""Identity links on both config store backends: the first user of a visitor merges its history."""

from __future__ import annotations

import threading

from tests.factories import make_store_site
from warehouse.config_store import identity_links


def link(store, site_id: str, visitor: str, user: str) -> bool:
    with store.begin() as conn:
        return identity_links.link(conn, site_id=site_id, visitor_id=visitor, user_id=user)


def test_the_first_user_merges_and_later_ones_are_kept_without_merging(store):
    with store.begin() as conn:
        site = make_store_site(conn)["id"]
    assert link(store, site, "v1", "ada") is True
    assert link(store, site, "v1", "ada") is False  # known link
    assert link(store, site, "v1", "bob") is False  # a shared device: kept, merges nothing
    assert link(store, site, "v2", "bob") is True
    with store.connect() as conn:
        assert identity_links.users_of_visitor(conn, site_id=site, visitor_id="v1") == ["ada", "bob"]


def test_two_users_linked_to_one_visitor_at_once_merge_one(store):
    """Servers linking the same visitor at the same moment both answered merged (a black-box check)."""
    with store.begin() as conn:
        site = make_store_site(conn)["id"]

    def race(start: threading.Barrier, merged: list[bool], visitor: str, user: str) -> None:
        start.wait()
        merged.append(link(store, site, visitor, user))

    for round_ in range(20):
        start, merged = threading.Barrier(2), []
        threads = [
            threading.Thread(target=race, args=(start, merged, f"v{round_}", user)) for user in ("ada", "bob")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(merged) == [False, True], round_
