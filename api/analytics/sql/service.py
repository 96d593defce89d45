"""Ad-hoc SQL and saved queries: who may run what, limits, parameters, and the config store."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from typing import Any

import structlog
from sqlalchemy import Connection

from aisle.settings import Settings
from api.analytics.scope import analytics_site
from api.analytics.sql.schemas import (
    Format,
    ParameterValue,
    SavedQueryCreate,
    SavedQueryOut,
    SavedQueryParameter,
    SavedQueryRun,
    SavedQueryUpdate,
    SqlQueryIn,
)
from api.auth.permissions import ANALYTICS_SQL
from api.deps import Principal, load_owned_site
from api.errors import AppError, BadRequest, Conflict, Forbidden, RequestTimeout, ServiceUnavailable
from queries.adhoc.errors import SqlError, SqlTimeout
from queries.adhoc.guard import GuardedQuery, guard
from queries.adhoc.policy import DEFAULT_ROW_LIMIT, MAX_JSON_ROWS, MAX_STREAM_ROWS
from queries.adhoc.run import SqlResult, execute
from queries.adhoc.sandbox import Sandbox
from warehouse.config_store import activity, saved_queries
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine

log = structlog.get_logger("aisle.sql")

# A row of `saved_queries`, as its repository returns it.
SavedQuery = dict[str, Any]


def http_error(error: SqlError) -> AppError:
    """408 for a query stopped at its time limit, 503 when too many run at once, else 400."""
    if isinstance(error, SqlTimeout):
        return RequestTimeout(error.message, code=error.code, details=error.details)
    if error.code == "SQL_BUSY":
        return ServiceUnavailable(error.message, code=error.code, headers={"Retry-After": "1"})
    return BadRequest(error.message, code=error.code, details=error.details)


def sql_site(store: ConfigStore, principal: Principal, site_id: str) -> Site:
    """The site, for a caller with `analytics:sql` in the organisation that owns it."""
    site = load_owned_site(store, principal, site_id)
    if not principal.can(ANALYTICS_SQL):
        raise Forbidden(f"Your role lacks the permission '{ANALYTICS_SQL}'", code="PERMISSION_DENIED")
    return site


def _guard(query: str, dialect: str) -> GuardedQuery:
    try:
        return guard(query, dialect=dialect)
    except SqlError as error:
        raise http_error(error) from None


def limits(
    settings: Settings, *, format: Format, limit: int | None, timeout_ms: int | None
) -> tuple[int, int]:
    """The row limit and time limit of a run, checked against the format's and the settings' maxima."""
    limit = limit or DEFAULT_ROW_LIMIT
    most = MAX_JSON_ROWS if format == "json" else MAX_STREAM_ROWS
    if limit > most:
        raise BadRequest(
            f"limit may be at most {most:,} for {format}; use csv or parquet for up to {MAX_STREAM_ROWS:,} rows",
            code="SQL_LIMIT_TOO_LARGE",
            details={"limit": limit, "max": most},
        )
    timeout_ms = timeout_ms or settings.sql_default_timeout_ms
    if timeout_ms > settings.sql_max_timeout_ms:
        raise BadRequest(
            f"timeoutMs may be at most {settings.sql_max_timeout_ms}",
            code="SQL_TIMEOUT_TOO_LARGE",
            details={"timeoutMs": timeout_ms, "max": settings.sql_max_timeout_ms},
        )
    return limit, timeout_ms


def run(
    engine: Engine,
    sandbox: Sandbox,
    *,
    site: Site,
    user_id: str,
    query: GuardedQuery,
    parameters: dict[str, Any],
    limit: int,
    timeout_ms: int,
    saved_query_id: str | None = None,
) -> SqlResult:
    """Run a guarded query over the site's views; one log line per run says who ran what."""
    fingerprint = hashlib.sha256(query.sql.encode()).hexdigest()[:16]
    run_log = log.bind(
        site_id=site["id"], user_id=user_id, saved_query_id=saved_query_id, sql_hash=fingerprint
    )
    try:
        result = execute(
            engine.lake,
            query,
            site_id=site["id"],
            parameters=parameters,
            limit=limit,
            timeout_ms=timeout_ms,
            sandbox=sandbox,
        )
    except SqlError as error:
        run_log.info("adhoc_sql", outcome=error.code)
        raise http_error(error) from None
    run_log.info(
        "adhoc_sql",
        outcome="ok",
        rows=result.table.num_rows,
        truncated=result.truncated,
        elapsed_ms=result.elapsed_ms,
    )
    return result


def run_query(
    engine: Engine,
    store: ConfigStore,
    sandbox: Sandbox,
    settings: Settings,
    *,
    principal: Principal,
    body: SqlQueryIn,
) -> SqlResult:
    """An ad-hoc query over a site whose organisation the caller belongs to, with `analytics:sql`."""
    site = sql_site(store, principal, body.site_id)
    return run_adhoc(
        engine,
        sandbox,
        settings,
        site=site,
        user_id=principal.user_id,
        query=body.query,
        dialect=body.dialect,
        parameters=body.parameters,
        format=body.format,
        limit=body.limit,
        timeout_ms=body.timeout_ms,
    )


def run_adhoc(
    engine: Engine,
    sandbox: Sandbox,
    settings: Settings,
    *,
    site: Site,
    user_id: str,
    query: str,
    dialect: str,
    parameters: dict[str, ParameterValue],
    format: Format,
    limit: int | None,
    timeout_ms: int | None,
    declared: list[SavedQueryParameter] | None = None,
    saved_query_id: str | None = None,
) -> SqlResult:
    """Check the limits, guard the text and run it. With `declared` (a saved query's parameters) the given
    values are checked against them and defaults fill the ones left out."""
    row_limit, time_limit = limits(settings, format=format, limit=limit, timeout_ms=timeout_ms)
    guarded = _guard(query, dialect)
    values = parameters if declared is None else bound_values(declared, parameters)
    return run(
        engine,
        sandbox,
        site=site,
        user_id=user_id,
        query=guarded,
        parameters=values,
        limit=row_limit,
        timeout_ms=time_limit,
        saved_query_id=saved_query_id,
    )


# --- parameters of saved queries ----------------------------------------------------------------------


def _invalid(name: str, expected: str) -> BadRequest:
    return BadRequest(
        f"Parameter '{name}' must be {expected}", code="SQL_PARAMETER_INVALID", details={"parameter": name}
    )


def coerce(parameter: SavedQueryParameter, value: ParameterValue) -> Any:
    """The value to bind for a declared parameter, checked against its type (dates and timestamps from
    ISO 8601 text)."""
    name, kind = parameter.name, parameter.type
    if value is None:
        return None
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "string_list" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise _invalid(name, "a date as YYYY-MM-DD") from None
    if kind == "timestamp" and isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise _invalid(name, "an ISO 8601 timestamp with an offset, e.g. 2024-03-01T00:00:00Z")
        return moment.astimezone(UTC)
    expected = {
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
        "string_list": "a list of strings",
        "date": "a date as YYYY-MM-DD",
        "timestamp": "an ISO 8601 timestamp",
    }[kind]
    raise _invalid(name, expected)


def _refuse_any(names: list[str], message: str, code: str, key: str, **details: Any) -> None:
    """A 400 when ``names`` is not empty: ``message`` followed by the names, and the names in
    ``details[key]`` (before any other ``details``)."""
    if names:
        raise BadRequest(f"{message}{', '.join(names)}", code=code, details={key: names, **details})


def check_saved(query: str, dialect: str, parameters: list[SavedQueryParameter]) -> GuardedQuery:
    """A saved query must pass the guard, and declare exactly the parameters it uses, each once, with
    defaults of their type."""
    guarded = _guard(query, dialect)
    declared = [p.name for p in parameters]
    duplicates = sorted({n for n in declared if declared.count(n) > 1})
    _refuse_any(duplicates, "Declare each parameter once: ", "SQL_PARAMETER_DUPLICATE", "duplicates")
    undeclared = [n for n in guarded.parameters if n not in declared]
    _refuse_any(
        undeclared,
        "Declare every parameter the query uses in `parameters`: ",
        "SQL_PARAMETER_UNDECLARED",
        "undeclared",
    )
    unused = [n for n in declared if n not in guarded.parameters]
    _refuse_any(unused, "The query does not use the declared parameters ", "SQL_PARAMETER_UNUSED", "unused")
    for parameter in parameters:
        coerce(parameter, parameter.default)
    return guarded


def bound_values(parameters: list[SavedQueryParameter], given: dict[str, ParameterValue]) -> dict[str, Any]:
    """The values of a saved query's run: the given ones, else the defaults of optional parameters."""
    declared = {p.name: p for p in parameters}
    unknown = sorted(set(given) - set(declared))
    _refuse_any(
        unknown,
        "The saved query has no parameter named ",
        "SQL_PARAMETER_UNKNOWN",
        "unknown",
        parameters=[*declared],
    )
    missing = [p.name for p in parameters if p.required and p.name not in given]
    _refuse_any(
        missing, "Give a value for every required parameter; missing: ", "SQL_PARAMETER_MISSING", "missing"
    )
    for parameter in parameters:
        if parameter.name in given and given[parameter.name] is None and not parameter.nullable:
            # Bound as NULL in place of the default, an explicit null would quietly match nothing.
            hint = "give a value" if parameter.required else "leave it out to use its default"
            raise BadRequest(
                f"Parameter '{parameter.name}' cannot be null (it is not declared nullable); {hint}",
                code="SQL_PARAMETER_INVALID",
                details={"parameter": parameter.name},
            )
    return {p.name: coerce(p, given.get(p.name, p.default)) for p in parameters}


# --- saved queries --------------------------------------------------------------------------------------


def saved_out(saved: SavedQuery) -> SavedQueryOut:
    return SavedQueryOut.model_validate(saved)


def get_owned(
    store: ConfigStore, *, principal: Principal, query_id: str, write: bool
) -> tuple[SavedQuery, Site]:
    """The saved query and its site, for a caller of the organisation that owns the site, with
    `analytics:sql` to change it or `analytics:view` to read and run it. Unknown and foreign ids both
    answer 403 `SITE_ACCESS_DENIED`, so ids cannot be probed."""
    with store.connect() as conn:
        saved = saved_queries.get(conn, query_id=query_id)
    if saved is None:
        raise _no_access()
    site = (sql_site if write else analytics_site)(store, principal, saved["site_id"])
    return saved, site


def _no_access() -> Forbidden:
    return Forbidden("You do not have access to this saved query", code="SITE_ACCESS_DENIED")


def _record(conn: Connection, *, site: Site, user_id: str, action: str, saved: SavedQuery) -> None:
    details = {"savedQueryId": saved["id"], "name": saved["name"]}
    activity.record_on_site(conn, site, action, user_id=user_id, details=details)


def _name_taken(name: str) -> Conflict:
    return Conflict(f"The site already has a saved query named '{name}'", code="SAVED_QUERY_NAME_TAKEN")


def create(store: ConfigStore, *, principal: Principal, body: SavedQueryCreate) -> SavedQuery:
    site = sql_site(store, principal, body.site_id)
    guarded = check_saved(body.query, body.dialect, body.parameters)
    try:
        with store.begin() as conn:
            saved = saved_queries.create(
                conn,
                site_id=site["id"],
                name=body.name,
                description=body.description,
                query=body.query,
                dialect=guarded.dialect,
                parameters=[p.model_dump() for p in body.parameters],
                created_by=principal.user_id,
            )
            _record(conn, site=site, user_id=principal.user_id, action="saved_query.created", saved=saved)
    except saved_queries.NameTaken:
        raise _name_taken(body.name) from None
    return saved


def list_for_site(store: ConfigStore, *, site: Site) -> list[SavedQuery]:
    with store.connect() as conn:
        return saved_queries.list(conn, site_id=site["id"])


def update(
    store: ConfigStore, *, saved: SavedQuery, site: Site, user_id: str, body: SavedQueryUpdate
) -> SavedQuery:
    values = body.model_dump(exclude_unset=True)
    if {"query", "dialect", "parameters"} & set(values):
        parameters = body.parameters if body.parameters is not None else _parameters(saved)
        query = body.query if body.query is not None else saved["query"]
        dialect = body.dialect if body.dialect is not None else saved["dialect"]
        guarded = check_saved(query, dialect, parameters)
        values["dialect"] = guarded.dialect
        values["parameters"] = [p.model_dump() for p in parameters]
    try:
        with store.begin() as conn:
            updated = saved_queries.update(conn, query_id=saved["id"], **values)
            if updated is None:  # deleted by another request in between
                raise _no_access()
            _record(conn, site=site, user_id=user_id, action="saved_query.updated", saved=updated)
    except saved_queries.NameTaken:
        raise _name_taken(values["name"]) from None
    return updated


def delete(store: ConfigStore, *, saved: SavedQuery, site: Site, user_id: str) -> None:
    with store.begin() as conn:
        saved_queries.delete(conn, query_id=saved["id"])
        _record(conn, site=site, user_id=user_id, action="saved_query.deleted", saved=saved)


def _parameters(saved: SavedQuery) -> list[SavedQueryParameter]:
    return [SavedQueryParameter.model_validate(p) for p in saved["parameters"]]


def run_saved(
    engine: Engine,
    sandbox: Sandbox,
    settings: Settings,
    *,
    saved: SavedQuery,
    site: Site,
    user_id: str,
    body: SavedQueryRun,
) -> SqlResult:
    # Guarded again on every run: the guard may have grown stricter since the query was saved.
    return run_adhoc(
        engine,
        sandbox,
        settings,
        site=site,
        user_id=user_id,
        query=saved["query"],
        dialect=saved["dialect"],
        parameters=body.parameters,
        format=body.format,
        limit=body.limit,
        timeout_ms=body.timeout_ms,
        declared=_parameters(saved),
        saved_query_id=saved["id"],
    )
