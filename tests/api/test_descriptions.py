"""Route descriptions that state a module's rules take them from the module's docstring, so the two
cannot drift apart."""

from __future__ import annotations

import types

import pytest

from aisle.settings import Settings
from api.app import create_app
from api.descriptions import module_rules
from ingest import product_feed
from queries import (
    attribution,
    categories,
    cohort,
    consent,
    correlations,
    funnel,
    journeys,
    money,
    products,
    search_analytics,
)

# One route per module whose docstring its description shows.
ROUTES = [
    ("get", "/analytics/search/top-queries", search_analytics, slice(None)),
    ("get", "/analytics/correlations/{siteId}", correlations, slice(None)),
    ("post", "/analytics/consent/{siteId}/simulate", consent, slice(None)),
    ("get", "/analytics/journeys/{siteId}/stats", journeys, slice(None)),
    ("get", "/analytics/category/{siteId}/top", categories, slice(1)),
    ("get", "/analytics/funnels/{siteId}", funnel, slice(1)),
    ("get", "/analytics/cohort/{siteId}", cohort, slice(None)),
    ("get", "/analytics/revenue/widgets/{entityId}", attribution, slice(None)),
    ("get", "/analytics/revenue/overview", money, slice(None)),
    ("get", "/analytics/events/{eventId}/attribution", attribution, slice(1)),
    ("post", "/analytics/product/{siteId}/feed", product_feed, slice(None)),
    ("get", "/analytics/product/{siteId}/top", products, slice(1)),
]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("descriptions") / "data",
        jwt_secret="test-signing-key-" + "x" * 32,
        event_batch_workers=0,
    )
    return create_app(settings).openapi()["paths"]


@pytest.mark.parametrize(("method", "path", "module", "paragraphs"), ROUTES, ids=[r[1] for r in ROUTES])
def test_a_route_description_shows_its_module_rules(paths, method, path, module, paragraphs):
    description = paths[f"/api/v1{path}"][method]["description"]
    for paragraph in module_rules(module, paragraphs=paragraphs).split("\n\n"):
        assert paragraph in description


def test_a_sentence_of_the_search_module_docstring_is_in_the_search_routes(paths):
    # Written out, so a change to the docstring shows here as a change of what API users read.
    sentence = (
        "A click belongs to its own query, else to the latest query a step of its session carried before "
        "it (a search's, or any step whose metadata names one)."
    )
    assert sentence in " ".join((search_analytics.__doc__ or "").split())
    for route in ("top-queries", "zero-results", "top-products"):
        assert sentence in paths[f"/api/v1/analytics/search/{route}"]["get"]["description"], route


def test_module_rules_are_markdown_without_the_summary():
    module = types.ModuleType("rules")
    module.__doc__ = """Summary, not shown.

    A ``query`` is
    trimmed.

    - ``a``: one,
      wrapped.
    - ``b``.

    How it runs: not for API users.
    """
    assert module_rules(module) == (
        "A `query` is trimmed.\n\n- `a`: one, wrapped.\n- `b`.\n\nHow it runs: not for API users."
    )
    assert (
        module_rules(module, paragraphs=slice(2)) == "A `query` is trimmed.\n\n- `a`: one, wrapped.\n- `b`."
    )
