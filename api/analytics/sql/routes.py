"""Ad-hoc SQL routes: run a query over a site's views, and saved queries (create, list, get, update,
delete, run) that dashboards call by id with parameters."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import chain
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response, StreamingResponse

from api.analytics.scope import AnalyticsSite
from api.analytics.sql import service
from api.analytics.sql.schemas import (
    VIEW_NAMES,
    Format,
    SavedQueryCreate,
    SavedQueryOut,
    SavedQueryRun,
    SavedQueryUpdate,
    SqlQueryIn,
    SqlResultOut,
)
from api.analytics.sql.service import SavedQuery
from api.deps import ConfigStoreDep, CurrentUser, EngineDep, SettingsDep, SqlSandboxDep
from api.errors import ERROR_RESPONSE_SCHEMA
from api.schemas import Ok
from queries.adhoc.errors import SqlError
from queries.adhoc.formats import csv_chunks, json_body, parquet_chunks
from queries.adhoc.run import SqlResult
from warehouse.config_store.sites import Site

router = APIRouter(prefix="/analytics/sql", tags=["analytics"])

SQL_ACCESS = (
    "Needs `analytics:sql` (owner and admin roles) in the organisation that owns the site; an unknown or "
    "foreign site answers 403 `SITE_ACCESS_DENIED`."
)
READ_ACCESS = (
    "Needs `analytics:view` in the organisation that owns the site; an unknown or foreign saved query "
    "answers 403 `SITE_ACCESS_DENIED` (never 404), so ids cannot be probed."
)
WRITE_ACCESS = (
    "Needs `analytics:sql` (owner and admin roles) in the organisation that owns the site; an unknown or "
    "foreign saved query answers 403 `SITE_ACCESS_DENIED`."
)
REFUSALS = (
    "A query the guard refuses answers 400 with a code naming the reason (`SQL_STATEMENT_NOT_ALLOWED`, "
    "`SQL_MULTIPLE_STATEMENTS`, `SQL_TABLE_NOT_ALLOWED`, `SQL_TABLE_FUNCTION_NOT_ALLOWED`, "
    "`SQL_FUNCTION_NOT_ALLOWED`, `SQL_PARAMETER_UNNAMED`) and `details.refused` / `details.position`; "
    "errors in the SQL answer 400 `SQL_SYNTAX_ERROR`, `SQL_INVALID` or `SQL_EXECUTION_ERROR` with the "
    "parser's message and position, a construct DuckDB has no form of 400 `SQL_UNSUPPORTED`, a query or "
    "expression nested too deeply (past DuckDB's 1000 levels) 400 `SQL_TOO_COMPLEX`; a query over its time "
    "limit answers 408 `SQL_TIMEOUT`, over its memory limit 400 `SQL_MEMORY_LIMIT`."
)
TRUNCATED_HEADER = "X-Aisle-Truncated"
ROW_COUNT_HEADER = "X-Aisle-Row-Count"
MEDIA_TYPES = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}

RESULT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "json: the columns and rows. csv or parquet: a download; the headers "
        f"`{TRUNCATED_HEADER}` (true when rows were cut at `limit`) and `{ROW_COUNT_HEADER}` describe it.",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
        },
        "headers": {
            TRUNCATED_HEADER: {
                "description": "true when the query had more rows than `limit`",
                "schema": {"type": "string"},
            },
            ROW_COUNT_HEADER: {"description": "Rows in the answer", "schema": {"type": "integer"}},
        },
    },
    408: ERROR_RESPONSE_SCHEMA,
    409: ERROR_RESPONSE_SCHEMA,
    503: ERROR_RESPONSE_SCHEMA,
}


def respond(result: SqlResult, *, format: Format) -> Response:
    """json in one body; csv and parquet streamed as a download named after the time of the run."""
    headers = {TRUNCATED_HEADER: str(result.truncated).lower(), ROW_COUNT_HEADER: str(result.table.num_rows)}
    try:
        if format == "json":
            return Response(json_body(result), media_type=MEDIA_TYPES["json"], headers=headers)
        chunks = csv_chunks(result) if format == "csv" else parquet_chunks(result)
        # The first chunk before the status line: a value no writer takes is an error, not a cut file.
        first = next(chunks)
    except SqlError as error:
        raise service.http_error(error) from None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    headers["Content-Disposition"] = f'attachment; filename="aisle-sql-{stamp}.{format}"'
    return StreamingResponse(chain([first], chunks), media_type=MEDIA_TYPES[format], headers=headers)


@router.post(
    "",
    response_model=SqlResultOut,
    responses=RESULT_RESPONSES,
    description=(
        f"Run one read-only query over the views of one site (`siteId`): {VIEW_NAMES}; "
        "written in any dialect sqlglot reads and transpiled to DuckDB. It runs in a fresh "
        "DuckDB that can read only that site's files, with external access off, the configuration locked, a "
        "memory limit and a time limit. "
        f"{REFUSALS}\n\n{SQL_ACCESS}"
    ),
)
def run_sql(
    body: SqlQueryIn,
    engine: EngineDep,
    sandbox: SqlSandboxDep,
    store: ConfigStoreDep,
    principal: CurrentUser,
    settings: SettingsDep,
) -> Response:
    result = service.run_query(engine, store, sandbox, settings, principal=principal, body=body)
    return respond(result, format=body.format)


# --- saved queries -------------------------------------------------------------------------------------


def _owned(write: bool):
    def load(
        store: ConfigStoreDep,
        principal: CurrentUser,
        query_id: Annotated[str, Path(alias="id", description="The saved query id.")],
    ) -> tuple[SavedQuery, Site]:
        return service.get_owned(store, principal=principal, query_id=query_id, write=write)

    return Depends(load)


ReadableSaved = Annotated[tuple[SavedQuery, Site], _owned(write=False)]
WritableSaved = Annotated[tuple[SavedQuery, Site], _owned(write=True)]


@router.post(
    "/saved",
    status_code=201,
    response_model=SavedQueryOut,
    responses={409: ERROR_RESPONSE_SCHEMA},
    description=(
        "Save a named query for a site (`siteId` of the body). The query is checked like an ad-hoc one and must "
        "declare every named parameter it uses (`SQL_PARAMETER_UNDECLARED`, `SQL_PARAMETER_UNUSED`, "
        "`SQL_PARAMETER_DUPLICATE`); a name already used in the site answers 409 `SAVED_QUERY_NAME_TAKEN`. "
        f"{REFUSALS}\n\n{WRITE_ACCESS}"
    ),
)
def create_saved_query(
    body: SavedQueryCreate, store: ConfigStoreDep, principal: CurrentUser
) -> SavedQueryOut:
    return service.saved_out(service.create(store, principal=principal, body=body))


@router.get(
    "/saved/site/{siteId}",
    response_model=list[SavedQueryOut],
    description=f"The site's saved queries, by name.\n\n{READ_ACCESS}",
)
def list_saved_queries(site: AnalyticsSite, store: ConfigStoreDep) -> list[SavedQueryOut]:
    return [service.saved_out(q) for q in service.list_for_site(store, site=site)]


@router.get("/saved/{id}", response_model=SavedQueryOut, description=f"One saved query.\n\n{READ_ACCESS}")
def get_saved_query(owned: ReadableSaved) -> SavedQueryOut:
    saved, _ = owned
    return service.saved_out(saved)


@router.put(
    "/saved/{id}",
    response_model=SavedQueryOut,
    responses={409: ERROR_RESPONSE_SCHEMA},
    description=(
        "Partial update: fields left out keep their value, `description: null` clears it; the site cannot "
        f"change. A changed query, dialect or parameter list is checked again as on create.\n\n{WRITE_ACCESS}"
    ),
)
def update_saved_query(
    body: SavedQueryUpdate, owned: WritableSaved, store: ConfigStoreDep, principal: CurrentUser
) -> SavedQueryOut:
    saved, site = owned
    return service.saved_out(
        service.update(store, saved=saved, site=site, user_id=principal.user_id, body=body)
    )


@router.delete("/saved/{id}", response_model=Ok, description=f"Delete a saved query.\n\n{WRITE_ACCESS}")
def delete_saved_query(owned: WritableSaved, store: ConfigStoreDep, principal: CurrentUser) -> Ok:
    saved, site = owned
    service.delete(store, saved=saved, site=site, user_id=principal.user_id)
    return Ok()


@router.post(
    "/saved/{id}/run",
    response_model=SqlResultOut,
    responses=RESULT_RESPONSES,
    description=(
        "Run a saved query with parameter values (`parameters`; declared defaults fill the ones left out), in "
        "any format, as POST /analytics/sql would. Values are checked against their declared type "
        "(`SQL_PARAMETER_INVALID`) and bound by the engine, never formatted into the SQL; a value for no "
        "declared parameter answers `SQL_PARAMETER_UNKNOWN`, a required one left out `SQL_PARAMETER_MISSING`. "
        "An explicit `null` is not the default: it binds SQL NULL for a parameter declared `nullable: true` "
        "and answers `SQL_PARAMETER_INVALID` for any other. "
        f"{REFUSALS}\n\n{READ_ACCESS}"
    ),
)
def run_saved_query(
    body: SavedQueryRun,
    engine: EngineDep,
    sandbox: SqlSandboxDep,
    owned: ReadableSaved,
    principal: CurrentUser,
    settings: SettingsDep,
) -> Response:
    saved, site = owned
    result = service.run_saved(
        engine, sandbox, settings, saved=saved, site=site, user_id=principal.user_id, body=body
    )
    return respond(result, format=body.format)
