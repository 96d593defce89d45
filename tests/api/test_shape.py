"""The one shape of an HTTP area (docs/architecture.md), checked: routes live in `api/<area>/routes.py`,
never touch storage or the app's state, and every route's 2xx answer is described by the OpenAPI schema."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from api.app import create_app

API = Path(__file__).resolve().parents[2] / "api"

# Only these read the application's state: the typed dependencies hand it on from there.
READS_APP_STATE = {"app.py", "deps.py"}

# The analytics areas are being reshaped into `api/analytics/<area>/routes.py`; until they are, their flat
# route modules are left out of the checks below, each by name. Remove a name once its area is shaped.
UNSHAPED_ROUTE_MODULES = {
    "analytics/attribution.py",
    "analytics/categories.py",
    "analytics/cohorts.py",
    "analytics/consent.py",
    "analytics/correlations.py",
    "analytics/funnel_definitions.py",
    "analytics/funnels.py",
    "analytics/journeys.py",
    "analytics/overview.py",
    "analytics/products.py",
    "analytics/revenue.py",
    "analytics/search.py",
    "analytics/site_events.py",
    "analytics/sql.py",
}
# Their 2xx answers the schema does not describe yet (method, path).
UNDESCRIBED_ANSWERS = {
    ("get", "/api/v1/analytics/cohort/{siteId}/export"),
    ("get", "/api/v1/analytics/journeys/{siteId}/export"),
    ("get", "/api/v1/analytics/overview"),
    ("get", "/api/v1/analytics/consent/{siteId}/export"),
}


def _modules() -> dict[str, ast.Module]:
    return {
        path.relative_to(API).as_posix(): ast.parse(path.read_text(), filename=str(path))
        for path in sorted(API.rglob("*.py"))
    }


def _defines_a_router(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == "APIRouter" or getattr(node.func, "attr", None) == "APIRouter")
        for node in ast.walk(tree)
    )


def _reads_app_state(tree: ast.Module) -> list[int]:
    """Lines of `app.state` or `<anything>.app.state`."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "state"
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "app")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "app")
        )
    ]


def _storage_calls(tree: ast.Module) -> list[int]:
    """Lines of `<anything>.connect(...)` or `<anything>.begin(...)`."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("connect", "begin")
    ]


def test_the_unshaped_list_names_only_modules_that_exist():
    modules = _modules()
    assert sorted(UNSHAPED_ROUTE_MODULES - set(modules)) == []


def test_routers_are_defined_in_routes_modules_only():
    misplaced = [
        name
        for name, tree in _modules().items()
        if _defines_a_router(tree) and Path(name).name != "routes.py" and name not in UNSHAPED_ROUTE_MODULES
    ]
    assert misplaced == []


def test_routes_modules_never_touch_storage_or_the_app_state():
    offences = {}
    for name, tree in _modules().items():
        if Path(name).name != "routes.py" or name in UNSHAPED_ROUTE_MODULES:
            continue
        if lines := _storage_calls(tree):
            offences[f"{name}: .connect()/.begin()"] = lines
        if lines := _reads_app_state(tree):
            offences[f"{name}: app.state"] = lines
    assert offences == {}


def test_only_the_app_factory_and_the_typed_dependencies_read_the_app_state():
    offences = {
        name: lines
        for name, tree in _modules().items()
        if name not in READS_APP_STATE
        and name not in UNSHAPED_ROUTE_MODULES
        and (lines := _reads_app_state(tree))
    }
    assert offences == {}


@pytest.mark.parametrize("probe", ["connect", "state"])
def test_the_checks_see_what_they_look_for(probe):
    if probe == "connect":
        source = "def route(store):\n    with store.connect() as conn:\n        return conn\n"
        assert _storage_calls(ast.parse(source)) == [2]
    else:
        source = "def route(request):\n    return request.app.state.engine\n"
        assert _reads_app_state(ast.parse(source)) == [2]


def test_every_2xx_answer_is_described_by_the_schema(settings):
    spec = create_app(settings).openapi()
    undescribed = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if (method, path) in UNDESCRIBED_ANSWERS:
                continue
            for status, answer in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                content = answer.get("content") or {}
                if not content or not all(media.get("schema") for media in content.values()):
                    undescribed.append(f"{method.upper()} {path} {status}")
    assert undescribed == []


def test_the_undescribed_list_names_only_routes_that_exist(settings):
    paths = create_app(settings).openapi()["paths"]
    assert sorted(f"{m} {p}" for m, p in UNDESCRIBED_ANSWERS if m not in paths.get(p, {})) == []
