"""Metrics: one metric validated (``ingest.schemas.MetricIn``, and a finite value) and normalised into
its lake row."""

from __future__ import annotations

import uuid
from datetime import UTC
from typing import Any

import orjson

from ingest.schemas import MetricIn
from ingest.validation import Context, Rejected, common_columns, event_time, micros, validated


def metric_row(raw: Any, ctx: Context) -> dict[str, Any]:
    metric = validated(MetricIn, raw, what="each metric", kind="METRIC")
    if metric.value != metric.value or metric.value in (float("inf"), float("-inf")):
        raise Rejected("INVALID_METRIC", "value must be a finite number")
    moment = event_time(metric.timestamp, ctx)
    return {
        "metric_id": uuid.uuid4().hex,
        "name": metric.name,
        "value": metric.value,
        "unit": metric.unit,
        "ts": micros(moment),
        "visitor_id": metric.visitor_id,
        "session_id": metric.session_id,
        "url": metric.url,
        "tags": orjson.dumps(metric.tags).decode(),
        **common_columns(ctx),
        "date": moment.astimezone(UTC).date().isoformat(),
    }
