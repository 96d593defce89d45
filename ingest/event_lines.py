"""The durable log's line for a batch of events: its format, written by the server (or a batch
worker) and read back by the flusher (``ingest.flusher``)."""

from __future__ import annotations

from itertools import compress
from typing import Any

import orjson

from ingest.events import EventColumns


def encode_event_batch(common: dict[str, Any], columns: EventColumns) -> bytes:
    """One log line per batch: the columns its events share by definition, once (``h``); a column
    that happens to hold one value for every event of the batch (a visitor, a session, a date, the
    currency, or nothing at all), that value once (``s``); the others as lists (``c``; ``event_id``
    always, it gives the batch's length). Hoisting shortens a storefront batch's line, and the flusher
    parses that much less JSON. (The flusher also reads the line forms older logs hold: every column
    in ``c``, ``r`` lines, a list of row objects, and single rows.)

    No column mixes numbers and booleans, so ``count`` (which compares with ``==``) sees one value
    only where there is one."""
    single, varying = {}, {}
    for name, values in columns.items():
        if name != "event_id" and values.count(values[0]) == len(values):
            single[name] = values[0]
        else:
            varying[name] = values
    return (
        b'{"h":'
        + orjson.dumps(common)
        + b',"s":'
        + orjson.dumps(single)
        + b',"c":'
        + orjson.dumps(varying)
        + b"}\n"
    )


def without_events(line: bytes, kept: list[bool]) -> bytes | None:
    """A batch line (``encode_event_batch``) with only the events ``kept`` marks; None when none is.
    (Only re-sent batches need it: a line is rewritten, not re-normalised.)"""
    if not any(kept):
        return None
    record = orjson.loads(line)
    record["c"] = {name: list(compress(values, kept)) for name, values in record["c"].items()}
    return orjson.dumps(record) + b"\n"
