"""The interactive API docs (Swagger UI) at ``/api/v1/docs``, served whole by this app.

FastAPI's own page loads Swagger UI's script and style from a CDN and is blank on a machine without
the internet; here they come from the ``fastapi-offline`` package, which ships Swagger UI's dist files
(Swagger UI 5: it renders OpenAPI 3.1, as FastAPI writes it), mounted under the docs' own path.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse

SWAGGER_UI_DIST = files("fastapi_offline") / "static"
# Swagger UI shows a badge fetched from validator.swagger.io unless the validator is turned off.
SWAGGER_UI_PARAMETERS = {"validatorUrl": None}


def install(app: FastAPI, *, docs_url: str, openapi_url: str) -> None:
    """Serve the docs page at ``docs_url``, its assets under ``{docs_url}/assets/``, and the page
    Swagger UI returns to after an OAuth2 login at ``{docs_url}/oauth2-redirect``."""
    assets = f"{docs_url}/assets"
    redirect = f"{docs_url}/oauth2-redirect"
    app.mount(assets, StaticFiles(directory=str(SWAGGER_UI_DIST)), name="swagger-ui-assets")

    async def docs_page(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + redirect,
            swagger_js_url=f"{root}{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{assets}/swagger-ui.css",
            swagger_favicon_url=f"{root}{assets}/favicon.png",
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )

    async def oauth2_redirect(_: Request) -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    app.add_route(docs_url, docs_page, include_in_schema=False)
    app.add_route(redirect, oauth2_redirect, include_in_schema=False)
