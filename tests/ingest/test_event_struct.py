"""The msgspec structs of the events batch are the documented TypedDicts, limits included."""

from __future__ import annotations

from typing import Annotated, NotRequired

import msgspec
import orjson
import pytest
from pydantic import Field
from typing_extensions import TypedDict, get_type_hints

from ingest.event_struct import EVENT_BATCH_DECODER, EventStruct, struct_of
from ingest.schemas import MAX_BATCH_EVENTS, MAX_ID_LENGTH, MAX_URL_LENGTH, EventIn


def event(**fields) -> dict:
    return {"name": "page_view", "visitorId": "v-1", "sessionId": "s-1", **fields}


def decodes(*events: dict) -> bool:
    try:
        EVENT_BATCH_DECODER.decode(orjson.dumps({"events": list(events)}))
    except msgspec.ValidationError:
        return False
    return True


def test_the_struct_has_every_documented_field_under_its_wire_name():
    fields = {f.name: f.encode_name for f in msgspec.structs.fields(EventStruct)}
    assert set(fields) == set(get_type_hints(EventIn))
    assert fields["visitor_id"] == "visitorId"
    assert fields["event_id"] == "eventId"


@pytest.mark.parametrize(
    ("field", "limit"),
    [("visitorId", MAX_ID_LENGTH), ("eventId", MAX_ID_LENGTH), ("url", MAX_URL_LENGTH), ("name", 64)],
)
def test_length_limits_carry_over(field, limit):
    base = event(name="page_view")
    assert decodes({**base, field: "p" * limit} if field != "name" else base)
    assert not decodes({**base, field: "p" * (limit + 1)})


def test_required_and_optional_fields():
    assert decodes(event())
    assert not decodes({"name": "page_view", "sessionId": "s-1"})  # visitorId is required
    assert not decodes(event(visitorId=""))  # and not empty
    assert decodes(event(userId=None, consent=None, metadata=None))  # nullable
    assert not decodes(*[event()] * (MAX_BATCH_EVENTS + 1))


def test_a_constraint_without_a_msgspec_form_is_refused_at_import_not_ignored():
    class Odd(TypedDict):
        code: NotRequired[Annotated[str, Field(pattern="^[A-Z]+$")]]

    with pytest.raises(TypeError, match="no msgspec form"):
        struct_of(Odd)
