"""The OpenAPI schema beyond what FastAPI derives: bodies that routes read raw (to validate item by item),
answers every route of a kind can give (400 for validation, 413/415 for JSON bodies), and the site API
key of the public routes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


# Answers the middleware gives before a route runs (api.body_limit, api.media_type).
_TOO_LARGE = "The body is larger than the route's limit (BODY_TOO_LARGE, or PAYLOAD_TOO_LARGE on ingestion)."
_NOT_JSON = "The body was sent under a content type other than JSON (UNSUPPORTED_MEDIA_TYPE)."

SITE_API_KEY = {
    "type": "apiKey",
    "in": "header",
    "name": "x-aisle-api-key",
    "description": "A site API key (POST /sites/{siteId}/public-api-keys), for apps that send neither "
    "Origin nor Referer. A browser on a verified domain of the site needs no key.",
}


def _document_body_answers(schema: dict[str, Any], error_response: dict[str, Any]) -> None:
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            responses = operation.setdefault("responses", {})
            responses.setdefault("413", {**error_response, "description": _TOO_LARGE})
            if set(content) == {"application/json"}:  # not ingestion (text/plain beacons) nor feeds
                responses.setdefault("415", {**error_response, "description": _NOT_JSON})


def _document_site_api_key(schema: dict[str, Any]) -> None:
    """Public routes take either a page's Origin (no credentials) or the site API key header."""
    schema.setdefault("components", {}).setdefault("securitySchemes", {})["siteApiKey"] = SITE_API_KEY
    for path, operations in schema.get("paths", {}).items():
        if "/public/sites/{siteKey}/" in path:
            for operation in operations.values():
                operation["security"] = [{}, {"siteApiKey": []}]


def install(
    app: FastAPI,
    *,
    error_response: dict[str, Any],
    settings_limits: Sequence[Callable[[dict[str, Any]], None]] = (),
) -> None:
    """Add the raw-read bodies to the schema and document validation errors as they are answered;
    ``settings_limits`` write the limits this app's settings set (a maximum no model can know)."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _DOCUMENTED.items():
            body = TypeAdapter(model).json_schema(ref_template=REF, by_alias=True)
            for component, definition in {**body.pop("$defs", {}), name: body}.items():
                # Two models of one name would overwrite each other's schema silently (a report's
                # answer documented as an ingest model of the same class name).
                if components.get(component, definition) != definition:
                    raise RuntimeError(f"two OpenAPI schemas are named {component}; rename one of the models")
                components[component] = definition
        # Validation failures answer 400 in the error envelope, never FastAPI's default 422.
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.get("responses", {})
                if responses.pop("422", None) is not None:
                    responses.setdefault("400", error_response)
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        _document_body_answers(schema, error_response)
        _document_site_api_key(schema)
        for document in settings_limits:
            document(schema)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to extend the schema it builds
