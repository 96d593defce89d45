"""Search analytics routes over HTTP: exact numbers for one site and for the organisation (rows stay
per site), 403 for another organisation's site, 400 for bad parameters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session, make_user
from warehouse.config_store.product_identity import product_id_for

pytestmark = pytest.mark.shared_app

ROUTES = ("top-queries", "top-products", "zero-results")


def load(app, owner: Session, site: dict) -> None:
    """ann searches "Mug" and opens P1 from the results; bob searches "mug" and finds nothing (the
    storefront says so with an empty result list)."""
    start = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)

    def ev(event: str, visitor: str, second: int, **metadata) -> dict:
        return {"name": event, "visitorId": visitor, "sessionId": f"s-{visitor}", "metadata": metadata,
                "timestamp": (start + timedelta(seconds=second)).isoformat()}  # fmt: skip

    events = [
        ev("search_query", "ann", 0, query="Mug"),
        ev("search_results", "ann", 1, query="Mug", resultCount=4),
        ev("product_click", "ann", 2, productItemCode="P1"),
        ev("product_view", "ann", 3, productItemCode="P1"),
        ev("search_query", "bob", 0, query="mug "),
        ev("search_results", "bob", 1, query="mug", resultCount=0),
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    app.state.ingest.flush()


def get(owner: Session, route: str, **params) -> dict:
    response = owner.get(f"/analytics/search/{route}", params={"days": 7, **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_one_site_and_the_organisation(app, owner, outsider):
    first, second = owner.make_site(name="A"), owner.make_site(name="B", domain="b.example.com")
    load(app, owner, first)
    load(app, owner, second)
    load(app, outsider, outsider.make_site())

    body = get(owner, "top-queries", siteId=first["id"])
    assert body["scope"]["siteIds"] == [first["id"]]
    assert (body["totalSearches"], body["totalQueries"], body["zeroResultRate"]) == (2, 1, 0.5)
    row = body["queries"][0]
    del row["lastSearchedAt"]
    assert row == {
        "siteId": first["id"], "query": "mug", "searches": 2, "people": 2, "zeroResultSearches": 1,
        "zeroResultRate": 0.5, "avgResultCount": 2.0, "clicks": 1, "clicksPerSearch": 0.5,
    }  # fmt: skip

    everywhere = get(owner, "top-queries")
    assert sorted(everywhere["scope"]["siteIds"]) == sorted([first["id"], second["id"]])
    assert everywhere["totalSearches"] == 4
    assert sorted(r["siteId"] for r in everywhere["queries"]) == sorted([first["id"], second["id"]])

    zero = get(owner, "zero-results", siteId=second["id"])
    assert zero["totalZeroResultSearches"] == 1
    assert [(r["query"], r["zeroResultSearches"], r["searches"], r["zeroResultRate"], r["people"])
            for r in zero["queries"]] == [("mug", 1, 2, 0.5, 1)]  # fmt: skip

    products = get(owner, "top-products", siteId=first["id"])
    assert products["totalClicks"] == 1
    assert products["products"] == [
        {"siteId": first["id"], "productId": str(product_id_for(first["id"], "P1")), "productItemCode": "P1",
         "clicks": 1, "people": 1, "queries": 1, "topQueries": [{"query": "mug", "clicks": 1}]},
    ]  # fmt: skip
    assert len(get(owner, "top-products", limit=1)["products"]) == 1
    assert get(owner, "top-products")["totalClicks"] == 2


def test_access_and_bad_parameters(client, store, owner, outsider):
    site = outsider.make_site()
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    for route in ROUTES:
        path = f"/analytics/search/{route}"
        assert owner.get(path, params={"siteId": site["id"]}).status_code == 403
        assert viewer.get(path).status_code == 403
        assert client.get(path).status_code == 401
        # An organisation without sites has nothing to show.
        assert owner.get(path).status_code == 200
        for params in ({"days": 0}, {"days": 366}, {"limit": 0}, {"limit": 501}, {"days": "x"}):
            response = owner.get(path, params=params)
            assert response.status_code == 400, (route, params, response.text)
            assert set(response.json()["error"]) == {"code", "message", "details"}
