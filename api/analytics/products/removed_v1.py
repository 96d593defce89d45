"""Product analytics v1 routes, removed with no alias: each answers 404 `ROUTE_REMOVED` naming the v2
route to use, and none is in the OpenAPI document (docs/decisions.md)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.errors import NotFound, error_response

# Paths under the analytics router's prefix, and the v2 route each names.
REMOVED = {
    "/product/{siteId}/top-revenue": "GET /api/v1/analytics/product/:siteId/top",
    "/product/{siteId}/bought-together": "GET /api/v1/analytics/product/:siteId/associations?source=purchase",
    "/product/{siteId}/added-to-cart-together": "GET /api/v1/analytics/product/:siteId/associations?source=cart",
    "/sites/{siteId}/products": "GET /api/v1/analytics/product/:siteId/catalog",
}

router = APIRouter()


def _removed(replacement: str) -> Callable[[str], None]:
    def answer(siteId: str) -> None:
        raise NotFound(
            f"This product analytics v1 route was removed on 16 February 2026; use {replacement}",
            code="ROUTE_REMOVED",
        )

    return answer


for _path, _replacement in REMOVED.items():
    router.add_api_route(
        _path,
        _removed(_replacement),
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
        # Every call answers the error envelope.
        response_class=JSONResponse,
        status_code=404,
        responses={404: error_response(f"ROUTE_REMOVED: use {_replacement}")},
    )
