"""JSON text as clients mean it, for every body and file we ingest.

Integers stay exact at any size: orjson (and most decoders) silently read one past 64 bits as a
float, so an id or amount of 20 digits would be stored changed; here the rules that follow (64-bit
metadata, money's digits) refuse it by name. A lone UTF-16 surrogate escape (``"\\ud800"``), which
JavaScript's ``JSON.stringify`` writes for a string cut inside an emoji, is read as U+FFFD, the
character ``TextEncoder`` and browsers make of it, instead of refusing the whole batch.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

_DECODER = msgspec.json.Decoder()
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
UTF8_BOM = b"\xef\xbb\xbf"


class NotJson(ValueError):
    """The text is not JSON; the message says why, for a client to read."""


def why_not_json(exc: BaseException | None) -> str | None:
    """Why text is not JSON, when a decoder failed with ``exc`` for a reason other than its syntax."""
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    return None


def loads(data: bytes | str) -> Any:
    raw = (data.encode() if isinstance(data, str) else data).removeprefix(UTF8_BOM)
    try:
        return _DECODER.decode(raw)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise NotJson(why_not_json(exc)) from exc
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        try:
            raw.decode()
        except UnicodeDecodeError:
            raise NotJson("it is not UTF-8 text") from exc
        if _SURROGATE_ESCAPE.search(raw):
            try:
                return _replace_lone_surrogates(json.loads(raw, parse_constant=_no_constant))
            except (ValueError, RecursionError):
                pass  # not JSON for another reason: msgspec's words say which
        raise NotJson(str(exc)) from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    return value
