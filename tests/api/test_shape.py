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

# Besides `routes.py`, the one router module an area may have: routes removed from the interface, each
# answering 404 `ROUTE_REMOVED` (docs/architecture.md).
ROUTER_MODULES = {"routes.py", "removed_v1.py"}


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


def test_routers_are_defined_in_routes_modules_only():
    misplaced = [
        name
        for name, tree in _modules().items()
        if _defines_a_router(tree) and Path(name).name not in ROUTER_MODULES
    ]
    assert misplaced == []


def test_routes_modules_never_touch_storage_or_the_app_state():
    offences = {}
    for name, tree in _modules().items():
        if Path(name).name not in ROUTER_MODULES:
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
        if name not in READS_APP_STATE and (lines := _reads_app_state(tree))
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
            for status, answer in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                content = answer.get("content") or {}
                if not content or not all(media.get("schema") for media in content.values()):
                    undescribed.append(f"{method.upper()} {path} {status}")
    assert undescribed == []
