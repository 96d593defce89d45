"""Request bodies that routes read raw (to validate item by item) but still document in OpenAPI."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import TypeAdapter

_DOCUMENTED: dict[str, Any] = {}
REF = "#/components/schemas/{model}"


def documented_body(model: Any, description: str, *, name: str | None = None) -> dict[str, Any]:
    """``openapi_extra`` for a route whose JSON body has the shape of ``model`` (a pydantic model
    or TypedDict, or a union of them under ``name``)."""
    name = name or model.__name__
    _DOCUMENTED[name] = model
    return {
        "requestBody": {
            "required": True,
            "description": description,
            # The ingestion routes read text/plain bodies too (navigator.sendBeacon's), as JSON.
            "content": {
                kind: {"schema": {"$ref": REF.format(model=name)}}
                for kind in ("application/json", "text/plain")
            },
        }
    }


def install(app: FastAPI, *, error_response: dict[str, Any]) -> None:
    """Add the raw-read bodies to the schema and document validation errors as they are answered."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _DOCUMENTED.items():
            body = TypeAdapter(model).json_schema(ref_template=REF, by_alias=True)
            components.update(body.pop("$defs", {}))
            components[name] = body
        # Validation failures answer 400 in the error envelope, never FastAPI's default 422.
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.get("responses", {})
                if responses.pop("422", None) is not None:
                    responses.setdefault("400", error_response)
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        return schema

    app.openapi = openapi
