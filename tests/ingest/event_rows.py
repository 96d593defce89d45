"""Events as whole lake rows, for tests: the log columns of ``ingest.events`` joined with the batch's
common columns, one dict per event."""

from __future__ import annotations

from typing import Any

from ingest.events import EventFailures, event_log_columns
from ingest.validation import Context, common_columns


def event_rows(raws: list[Any], ctx: Context) -> tuple[list[dict[str, Any]], EventFailures]:
    """Whole lake rows (log columns with the batch's common columns) and the rejections by index."""
    columns, rejected = event_log_columns(raws, ctx)
    common = common_columns(ctx)
    rows = zip(*columns.values(), strict=True)
    return [{**dict(zip(columns, row, strict=True)), **common} for row in rows], rejected


def event_row(raw: Any, ctx: Context) -> dict[str, Any]:
    """The one event's row; its rejection raised."""
    rows, rejected = event_rows([raw], ctx)
    if rejected:
        raise rejected[0][1]
    return rows[0]
