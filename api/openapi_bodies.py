"""Request bodies that routes read raw (to validate item by item) but still document in OpenAPI."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

_DOCUMENTED: dict[str, type[BaseModel]] = {}
REF = "#/components/schemas/{model}"


def documented_body(model: type[BaseModel], description: str) -> dict[str, Any]:
    """``openapi_extra`` for a route whose JSON body has the shape of ``model``."""
    _DOCUMENTED[model.__name__] = model
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}},
        }
    }


def install(app: FastAPI) -> None:
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _DOCUMENTED.items():
            body = model.model_json_schema(ref_template=REF, by_alias=True)
            components.update(body.pop("$defs", {}))
            components[name] = body
        return schema

    app.openapi = openapi
