"""What the OpenAPI schema says of events and orders is what ingestion takes: no body the schema allows
is refused for a rule it leaves out."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aisle.settings import Settings
from api.app import create_app
from ingest.event_names import CANONICAL_EVENT_NAMES
from ingest.orders import order_row
from ingest.schemas import (
    AMOUNT_TEXT,
    BROKEN_CHARACTER,
    EXACT_ID_PATTERN,
    IDENTITY_ID_PATTERN,
    NEGATIVE_AMOUNT_PATTERN,
    NOT_BLANK_TEXT,
)
from ingest.validation import Context, Rejected

CTX = Context(
    site_id="00000000-0000-0000-0000-000000000001",
    site_currency="EUR",
    received_at=datetime(2026, 1, 5, 12, tzinfo=UTC),
    channel="server",
    historical=True,
)
PRODUCT_ID = "7837fdd1-0e4c-4997-8c8e-6f31b9df9d89"
TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
    "object": dict,
    "array": list,
}


def matches(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> bool:
    """JSON Schema validation, for the keywords the ingest schemas use (`format` is not checked)."""
    if "$ref" in schema:
        return matches(value, components[schema["$ref"].rsplit("/", 1)[1]], components)
    if "type" in schema:
        wanted = TYPES[schema["type"]]
        if not isinstance(value, wanted) or (isinstance(value, bool) and schema["type"] != "boolean"):
            return False
    checks = [
        "anyOf" not in schema or any(matches(value, branch, components) for branch in schema["anyOf"]),
        "not" not in schema or not matches(value, schema["not"], components),
        "const" not in schema or value == schema["const"],
        "enum" not in schema or value in schema["enum"],
    ]
    if isinstance(value, str):
        checks += [
            len(value) >= schema.get("minLength", 0),
            len(value) <= schema.get("maxLength", len(value)),
            "pattern" not in schema or re.search(schema["pattern"], value) is not None,
        ]
    if isinstance(value, int | float) and not isinstance(value, bool):
        checks += [value >= schema.get("minimum", value), value <= schema.get("maximum", value)]
    if isinstance(value, dict):
        checks += [key in value for key in schema.get("required", ())]
        checks += [
            matches(value[key], spec, components)
            for key, spec in schema.get("properties", {}).items()
            if key in value
        ]
    if isinstance(value, list):
        checks += [
            schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)),
            *(matches(item, schema.get("items", {}), components) for item in value),
        ]
    return all(checks)


@pytest.fixture(scope="module")
def components(tmp_path_factory) -> dict[str, Any]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("openapi") / "data",
        jwt_secret="test-signing-key-" + "x" * 32,
        event_batch_workers=0,
    )
    return create_app(settings).openapi()["components"]["schemas"]


def taken(order: dict[str, Any]) -> bool:
    try:
        order_row(order, CTX)
    except Rejected:
        return False
    return True


def order(items: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    line = {"productItemCode": "A-1", "quantity": 1, "price": "9.90"}
    return {
        "orderId": "o-1",
        "visitorId": "v",
        "sessionId": "s",
        "total": "9.90",
        "items": items or [line],
        **fields,
    }


ORDERS = {
    "an item with a code": order(),
    "an item with a product id": order([{"productId": PRODUCT_ID, "quantity": 1, "price": 1}]),
    "an item with neither": order([{"quantity": 1, "price": 1}]),
    "an item with null for both": order(
        [{"productItemCode": None, "productId": None, "quantity": 1, "price": 1}]
    ),
    "an item with a blank code": order([{"productItemCode": " \t", "quantity": 1, "price": 1}]),
    "a blank code beside a product id": order(
        [{"productItemCode": " ", "productId": PRODUCT_ID, "quantity": 1, "price": 1}]
    ),
    "a code holding U+FFFD": order([{"productItemCode": "A\ufffd", "quantity": 1, "price": 1}]),
    "a blank order id": order(orderId="\u3000 "),
    "a visitor id holding U+FFFD": order(visitorId="v\ufffd"),
    "a blank session id (a file separator)": order(sessionId="\x1c"),
    "an amount that is not decimal text": order(total="12,50"),
    "an amount in other digits": order(total="١٢"),
    "a negative sale": order(total="-0.5"),
    "a sale of minus zero": order(total="-0.00"),
    "a sale with a negative line": order([{"productItemCode": "A", "quantity": -1, "price": 1}]),
    "a sale with a negative price": order([{"productItemCode": "A", "quantity": 1, "price": -0.5}]),
    "a negative refund": order(total="-9.90", isRefund=True, refundOf="o-0"),
    "a refund of negative lines": order(
        [{"productItemCode": "A", "quantity": -1, "price": "9.90"}], isRefund=True
    ),
    "a sale naming a refunded order": order(refundOf="o-0"),
    "a sale with a blank refundOf": order(refundOf="  "),
}


@pytest.mark.parametrize("body", ORDERS.values(), ids=ORDERS.keys())
def test_the_openapi_order_schema_allows_exactly_the_orders_ingestion_takes(components, body):
    assert matches(body, components["OrderIn"], components) == taken(body)


def test_the_openapi_order_item_says_it_names_a_product(components):
    assert components["OrderItemIn"]["anyOf"] == [
        {
            "required": ["productItemCode"],
            "properties": {"productItemCode": {"type": "string", "pattern": NOT_BLANK_TEXT}},
        },
        {"required": ["productId"], "properties": {"productId": {"type": "string"}}},
    ]


def test_the_openapi_event_names_the_canonical_event_names(components):
    assert components["EventIn"]["properties"]["name"]["enum"] == sorted(CANONICAL_EVENT_NAMES)
    assert components["EventIn"]["properties"]["visitorId"]["pattern"] == IDENTITY_ID_PATTERN


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8) | st.from_regex(
    r"\s*\S?\s*", fullmatch=True
)


@given(TEXT | st.builds(lambda a, b: a + BROKEN_CHARACTER + b, TEXT, TEXT))
@settings(max_examples=400, derandomize=True, deadline=None)
def test_the_id_patterns_are_the_checks_of_ids(text):
    assert bool(re.search(IDENTITY_ID_PATTERN, text)) == (bool(text.strip()) and BROKEN_CHARACTER not in text)
    assert bool(re.search(EXACT_ID_PATTERN, text)) == (BROKEN_CHARACTER not in text)
    assert bool(re.search(NOT_BLANK_TEXT, text)) == bool(text.strip())


def decimal_or_none(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:  # an exponent past what a Decimal holds: refused as no decimal
        return None


@given(
    st.from_regex(AMOUNT_TEXT, fullmatch=True).filter(
        lambda t: len(t) < 40 and decimal_or_none(t) is not None
    )
)
@settings(max_examples=400, derandomize=True, deadline=None)
def test_the_negative_amount_pattern_is_an_amount_below_zero(text):
    assert bool(re.search(NEGATIVE_AMOUNT_PATTERN, text)) == (Decimal(text) < 0)
