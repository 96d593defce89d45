"""One error hierarchy, rendered by one handler as ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

import redis
import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError as PydanticValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from ingest import json_text
from ingest.event_names import CANONICAL_EVENT_NAMES, allowed_text


class AppError(Exception):
    status_code = 400
    code = "BAD_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details
        self.headers = headers


class BadRequest(AppError):
    status_code = 400
    code = "BAD_REQUEST"


class Unauthorized(AppError):
    status_code = 401
    code = "UNAUTHORIZED"


class Forbidden(AppError):
    status_code = 403
    code = "FORBIDDEN"


class NotFound(AppError):
    status_code = 404
    code = "NOT_FOUND"


class RequestTimeout(AppError):
    status_code = 408
    code = "REQUEST_TIMEOUT"


class Conflict(AppError):
    status_code = 409
    code = "CONFLICT"


class PayloadTooLarge(AppError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(AppError):
    status_code = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


class BodyTooLarge(StarletteHTTPException):
    """A request body past the general limit (``api.body_limit``), found while it is read. An
    HTTPException rather than an AppError because FastAPI passes those on from its body parsing, where
    any other exception becomes a 400 "There was an error parsing the body"."""

    code = "BODY_TOO_LARGE"

    def __init__(self, limit: int) -> None:
        super().__init__(413, detail=f"Request bodies are limited to {limit} bytes")


class TooManyRequests(AppError):
    status_code = 429
    code = "RATE_LIMITED"


class ServiceUnavailable(AppError):
    status_code = 503
    code = "SERVICE_UNAVAILABLE"


_STATUS_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "REQUEST_TIMEOUT",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
}


# nginx's status for a request its client closed before the answer: not a server error.
CLIENT_CLOSED_REQUEST = 499


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


# `details` has one documented shape (also in the README's Errors): null when the message says all,
# else an object naming the refusal's facts under their own keys; a request that failed validation
# lists its problems under `fields`.
FIELD_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One problem of a request that failed validation.",
    "properties": {
        "field": {
            "type": "string",
            "description": "Where, as a path in the request: `body.items.0.price`, `query.siteId`.",
        },
        "message": {"type": "string"},
        "type": {
            "type": "string",
            "description": "The kind of problem: `missing`, `string_too_long`, `literal_error`, ...",
        },
        "allowed": {
            "type": "array",
            "description": "The values the field takes, when it refused one outside a closed set.",
        },
    },
    "required": ["field", "message", "type"],
}
DETAILS_SCHEMA: dict[str, Any] = {
    "description": "null when the message says all; otherwise an object with the refusal's facts under "
    "their own names (a throttle's `limit` and `windowSeconds`, a SQL error's `position`, an unknown "
    "value's `allowed` values). A request that failed validation (`VALIDATION_FAILED`, and "
    "`MALFORMED_JSON` of a body parsed into a model, saying where the JSON broke) lists its problems "
    "under `fields`.",
    "type": ["object", "null"],
    "properties": {
        "fields": {"type": "array", "items": FIELD_ERROR_SCHEMA},
        "allowed": {
            "type": "array",
            "description": "The values taken, when a value outside them was refused.",
        },
    },
}

ERROR_RESPONSE_SCHEMA = {
    "description": "Error envelope",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "error": {
                        "type": "object",
                        "properties": {
                            "code": {"type": "string", "description": "Stable, for programs to branch on."},
                            "message": {"type": "string", "description": "For people."},
                            "details": DETAILS_SCHEMA,
                        },
                        "required": ["code", "message", "details"],
                    }
                },
                "required": ["error"],
            }
        }
    },
}


# Codes that refuse a value outside a closed set, with the set: whichever route refused the value,
# the answer names the values it takes, in the message and as `details.allowed`.
ALLOWED_VALUES: dict[str, list[str]] = {"UNKNOWN_EVENT_NAME": sorted(CANONICAL_EVENT_NAMES)}


def _with_allowed(exc: AppError) -> tuple[str, dict[str, Any] | None]:
    allowed = ALLOWED_VALUES.get(exc.code)
    if allowed is None:
        return exc.message, exc.details
    return f"{exc.message} ({allowed_text(allowed)})", {**(exc.details or {}), "allowed": allowed}


def malformed_json(reason: str) -> BadRequest:
    """A body that is not JSON, answered in the same words on every route that reads one."""
    return BadRequest(f"Body is not valid JSON: {reason}", code="MALFORMED_JSON")


# What FastAPI answers when its JSON decoding of a body fails other than with a syntax error: nesting
# past the recursion limit, bytes that are not UTF-8.
_FASTAPI_BODY_PARSE_ERROR = "There was an error parsing the body"


def unexpected_error(exc: Exception) -> JSONResponse:
    """The answer to a failure no handler expected: logged with its traceback (called while it is
    being handled), a 500 in the envelope."""
    import structlog

    structlog.get_logger("aisle.errors").exception("unhandled_error", error=repr(exc))
    return JSONResponse(error_body("INTERNAL_ERROR", "Internal server error"), 500)


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route answers at the request's path (RFC 9110 §15.5.6): Starlette's 405 names
    only the first route that matched the path, so `PATCH /sites/{id}` said `Allow: GET`, not PUT and
    DELETE too. HEAD goes with GET (``api.head_requests``)."""
    routes = request.app.router.routes
    allowed = [
        m for m in _METHODS if any(r.matches({**request.scope, "method": m})[0] == Match.FULL for r in routes)
    ]
    if "GET" in allowed:
        allowed.insert(allowed.index("GET") + 1, "HEAD")
    return allowed


def error_response(description: str) -> dict[str, Any]:
    """An OpenAPI response in the error envelope, described for its status."""
    return {**ERROR_RESPONSE_SCHEMA, "description": description}


# pydantic names each member of a union it tried in the loc of that member's error, by the member's
# validator: `bool`, `constrained-str`, `dict[str,int]`, `function-after[...]`. None of them is in the body.
_UNION_MEMBERS = frozenset(
    {
        "any",
        "bool",
        "bytes",
        "callable",
        "complex",
        "constrained-bytes",
        "constrained-float",
        "constrained-int",
        "constrained-str",
        "date",
        "datetime",
        "decimal",
        "float",
        "int",
        "multi-host-url",
        "none",
        "str",
        "time",
        "timedelta",
        "url",
        "uuid",
    }
)
_PARAMETRISED_UNION_MEMBER = re.compile(r"[a-z]+(?:-[a-z]+)*\[.*\]", re.DOTALL)
_UNKNOWN = object()


def _union_member(segment: Any) -> bool:
    return isinstance(segment, str) and (
        segment in _UNION_MEMBERS or _PARAMETRISED_UNION_MEMBER.fullmatch(segment) is not None
    )


def _holds(value: Any, segment: Any) -> bool:
    if isinstance(value, dict):
        return segment in value
    return isinstance(value, list) and isinstance(segment, int) and 0 <= segment < len(value)


def _field(loc: tuple[Any, ...], body: Any) -> str:
    """The loc as a path in the request, without pydantic's union member names. Where the body is known
    the path follows it, so a key spelled like a member (a SQL parameter named `date`) stays."""
    path, value = [], _UNKNOWN if body is _UNKNOWN else {"body": body}
    for segment in loc:
        if _holds(value, segment):
            value = value[segment]
        elif _union_member(segment):
            continue
        else:
            value = _UNKNOWN
        path.append(str(segment))
    return ".".join(path)


def _allowed(expected: Any) -> list[Any] | None:
    """The values a pydantic literal or enum error lists in its ``expected`` (`'csv', 'json' or 3`)."""
    if not isinstance(expected, str):
        return None
    try:
        tokens = [
            "," if (t.type, t.string) == (tokenize.NAME, "or") else t.string
            for t in tokenize.generate_tokens(io.StringIO(expected).readline)
        ]
        values = ast.literal_eval(f"[{' '.join(tokens)}]")
    except (SyntaxError, ValueError, tokenize.TokenError):
        return None
    return values if isinstance(values, list) and values else None


def _validation_details(errors, body: Any = _UNKNOWN) -> list[dict[str, Any]]:
    """FastAPI's request errors and pydantic's model errors, in the envelope's one detail shape, each
    once (a parameter two dependencies of a route read is reported by both). A value refused from a
    closed set (a Literal, an Enum) names the values the field takes."""
    details = []
    for err in errors:
        detail = {
            "field": _field(tuple(err.get("loc", ())), body),
            "message": err.get("msg", ""),
            "type": err.get("type", ""),
        }
        if detail["type"] in ("literal_error", "enum") and (
            allowed := _allowed((err.get("ctx") or {}).get("expected"))
        ):
            detail["allowed"] = allowed
        details.append(detail)
    return list({repr(tuple(d.values())): d for d in details}.values())


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        message, details = _with_allowed(exc)
        return JSONResponse(
            error_body(exc.code, message, details), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        details = {"fields": _validation_details(errors, exc.body)}
        if broken := next((e for e in errors if e.get("type") == "json_invalid"), None):
            reason = (broken.get("ctx") or {}).get("error") or "it is malformed"
            return JSONResponse(error_body("MALFORMED_JSON", malformed_json(reason).message, details), 400)
        return JSONResponse(error_body("VALIDATION_FAILED", "Request validation failed", details), 400)

    @app.exception_handler(PydanticValidationError)
    async def _model_validation(_: Request, exc: PydanticValidationError) -> JSONResponse:
        details = {"fields": _validation_details(exc.errors())}
        return JSONResponse(error_body("VALIDATION_FAILED", "Request validation failed", details), 400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.detail == _FASTAPI_BODY_PARSE_ERROR and (reason := json_text.why_not_json(exc.__cause__)):
            # Said as ingestion says it (ingest.json_text reads those bodies with the same reasons).
            return await _app_error(request, malformed_json(reason))
        code = getattr(exc, "code", None) or _STATUS_CODES.get(exc.status_code, "ERROR")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ").capitalize()
        if exc.status_code == 404 and message == "Not Found":
            message = "No such route"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
        return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=headers)

    @app.exception_handler(redis.RedisError)
    async def _redis_down(_: Request, exc: redis.RedisError) -> JSONResponse:
        # Throttles, windows and (on a Redis log) the log itself live in Redis: without it nothing
        # can be checked or stored, and nothing was; the client retries.
        import structlog

        structlog.get_logger("aisle.errors").warning("redis_unavailable", error=repr(exc))
        return JSONResponse(
            error_body("SHARED_STATE_UNAVAILABLE", "Redis is not answering; retry shortly"),
            status_code=503,
            headers={"Retry-After": "1"},
        )

    async def _store_down(_: Request, exc: Exception) -> JSONResponse:
        # Sites, keys and users live in the config store: while it is away (PostgreSQL restarting, a
        # SQLite file locked past the timeout) nothing can be checked, nothing was stored, and the
        # client retries. A statement the store refuses is our bug, and stays a 500.
        if not store_unavailable(exc):
            return unexpected_error(exc)
        import structlog

        structlog.get_logger("aisle.errors").warning("config_store_unavailable", error=repr(exc))
        return JSONResponse(
            error_body("CONFIG_STORE_UNAVAILABLE", "The configuration store is not answering; retry shortly"),
            status_code=503,
            headers={"Retry-After": "1"},
        )

    app.add_exception_handler(sqlalchemy.exc.OperationalError, _store_down)
    app.add_exception_handler(sqlalchemy.exc.InterfaceError, _store_down)

    @app.exception_handler(ClientDisconnect)
    async def _client_left(_: Request, exc: ClientDisconnect) -> Response:
        # The client left before its body arrived; the answer goes nowhere, and is counted as such.
        return Response(status_code=CLIENT_CLOSED_REQUEST)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        return unexpected_error(exc)


# SQLite reports a statement it cannot run as an OperationalError too; these are not an outage.
_STATEMENT_ERRORS = ("syntax error", "no such table", "no such column", "has no column")


def store_unavailable(exc: Exception) -> bool:
    """Whether a config-store error means the store is away (connection refused or lost, a database
    file locked or unreadable) rather than a statement it refused."""
    if isinstance(exc, sqlalchemy.exc.InterfaceError) or getattr(exc, "connection_invalidated", False):
        return True
    message = str(getattr(exc, "orig", exc)).lower()
    return not any(marker in message for marker in _STATEMENT_ERRORS)
