"""The tracker configuration and its data-layer block: defaults and validation from the spec's tables."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import AliasChoices, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from api.schemas import StrictCamelModel
from ingest.event_names import CANONICAL_EVENT_NAMES

ConsentCategory = Literal["necessary", "analytics", "marketing", "preferences"]
_IDENTIFIER = r"^[A-Za-z_$][A-Za-z0-9_$]*$"


class _Setting(StrictCamelModel):
    # Strict types: "yes" or 1 for a flag and "50" for a size are mistakes to report, not to coerce.
    model_config = ConfigDict(strict=True)


def _document_write_name(schema: dict[str, Any]) -> None:
    # The schema forbids unknown properties, so a client checking its payload against it would refuse
    # the spec's `granularEnabled` unless it is listed beside `granular`.
    properties = schema["properties"]
    write_name = {
        **properties["granular"],
        "title": "Granularenabled",
        "description": "The write name of `granular` (as the spec's payload sends it); answers name it "
        "`granular`. Sent with `granular` too, the two must agree.",
    }
    schema["properties"] = {}
    for name, spec in properties.items():
        schema["properties"][name] = spec
        if name == "granular":
            schema["properties"]["granularEnabled"] = write_name


class CookieConsent(_Setting):
    model_config = ConfigDict(json_schema_extra=_document_write_name)

    enabled: bool = False
    variable_name: str = Field(default="aisleConsent", pattern=_IDENTIFIER, max_length=100)
    wait_for_consent: bool = False
    default_consent: bool | str | dict[ConsentCategory, bool] = False
    timeout_ms: int | None = Field(default=None, ge=0, le=600_000)
    # The read side calls it `granular`; the write payload names it `granularEnabled`.
    granular: bool | None = Field(
        default=None,
        validation_alias=AliasChoices("granularEnabled", "granular", "granular_enabled"),
        serialization_alias="granular",
    )
    required_categories: list[ConsentCategory] | None = None
    consent_change_callback: str | None = Field(default=None, max_length=200)
    storage_key: str | None = Field(default=None, max_length=100)


class TrackingModule(_Setting):
    enabled: bool = True


class TrackingModules(_Setting):
    page: TrackingModule = TrackingModule()
    product: TrackingModule = TrackingModule()
    basket: TrackingModule = TrackingModule()
    checkout: TrackingModule = TrackingModule()
    user: TrackingModule = TrackingModule()
    search: TrackingModule = TrackingModule()


class DataLayerConfig(_Setting):
    enabled: bool = True
    variable_name: str = Field(default="aisleLayer", pattern=_IDENTIFIER, max_length=100)
    page_detection: Literal["auto", "manual", "patterns"] = "auto"
    auto_page_tracking: bool = True
    cart_abandonment_timeout: int = Field(default=30, ge=1, le=10_080, description="Minutes.")
    page_type_patterns: dict[str, str] = Field(
        default_factory=dict, description="Page type to regular expression over the URL."
    )
    debug_mode: bool = False
    cookie_consent: CookieConsent = CookieConsent()
    tracking_modules: TrackingModules = TrackingModules()
    buffer_size: int = Field(default=10, ge=1, le=1000)
    flush_interval: int = Field(default=1000, ge=100, le=600_000, description="Milliseconds.")
    reverse_event_mapping: dict[str, str] | None = Field(
        default=None, description="External data-layer event name (exact, case included) to canonical name."
    )
    external_data_layer_name: str = Field(default="dataLayer", pattern=_IDENTIFIER, max_length=100)

    @field_validator("page_type_patterns")
    @classmethod
    def _patterns_compile(cls, value: dict[str, str]) -> dict[str, str]:
        for page_type, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"pageTypePatterns.{page_type} is not a valid regular expression: {exc}"
                ) from exc
        return value

    @field_validator("reverse_event_mapping")
    @classmethod
    def _targets_are_canonical(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for external, canonical in (value or {}).items():
            if canonical not in CANONICAL_EVENT_NAMES:
                raise ValueError(
                    f"reverseEventMapping.{external} maps to '{canonical}', not a canonical event name "
                    f"(allowed: {', '.join(sorted(CANONICAL_EVENT_NAMES))})"
                )
        return value


class TrackerConfig(_Setting):
    """The tracker's settings. Types are strict: a count is written as a JSON integer (`50`, not `50.0`,
    which JSON Schema also calls an integer), a flag as true or false; anything else is 400."""

    batching_enabled: bool = False
    batch_size: int = Field(default=50, ge=1, le=500)
    flush_interval: int = Field(default=30, ge=1, le=3600, description="Seconds.")
    offline_persistence: bool = True
    send_beacon_on_unload: bool = True
    max_retries: int = Field(default=3, ge=0, le=10)
    max_queue_size: int = Field(default=100, ge=1, le=10_000)
    max_storage_events: int = Field(default=50, ge=0, le=10_000)
    debug_mode: bool = False
    data_layer_config: DataLayerConfig = DataLayerConfig()


def default_tracking_config() -> dict[str, Any]:
    return TrackerConfig().model_dump(by_alias=True)


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key not in _REPLACED_WHOLE:
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# Maps are replaced, not merged, so a key can be removed by sending the map without it.
_REPLACED_WHOLE = {"pageTypePatterns", "reverseEventMapping", "defaultConsent"}


# Other spellings of `granularEnabled` that CookieConsent accepts (the read name among them).
_GRANULAR_SPELLINGS = ("granular", "granular_enabled")


def _granular_under_write_name(patch: dict[str, Any]) -> dict[str, Any]:
    """The patch with the consent flag spelled `granularEnabled`, so a body sending `granular` (as a
    GET answer does) merges onto the stored flag instead of colliding with it. Spellings sent together
    must agree: which one to believe is not ours to guess."""
    layer = patch.get("dataLayerConfig")
    if not isinstance(layer, dict):
        return patch
    consent = layer.get("cookieConsent")
    if not isinstance(consent, dict) or not any(s in consent for s in _GRANULAR_SPELLINGS):
        return patch
    consent = dict(consent)
    sent = {s: consent.pop(s) for s in ("granularEnabled", *_GRANULAR_SPELLINGS) if s in consent}
    value = next(iter(sent.values()))
    # Typed as well as equal: `true` and `1` differ here as they do to the strict model.
    if any(type(other) is not type(value) or other != value for other in sent.values()):
        raise _disagreement(sent)
    consent["granularEnabled"] = value
    return {**patch, "dataLayerConfig": {**layer, "cookieConsent": consent}}


def _disagreement(sent: dict[str, Any]) -> ValidationError:
    message = f"{' and '.join(sent)} name one flag and were sent different values; send one of them"
    error = InitErrorDetails(
        type=PydanticCustomError("granular_spellings_disagree", message),
        loc=("dataLayerConfig", "cookieConsent", "granularEnabled"),
        input=sent,
    )
    return ValidationError.from_exception_data("TrackerConfig", [error])


def apply_update(stored: dict[str, Any], patch: dict[str, Any]) -> TrackerConfig:
    """Merge a partial update into the stored config and validate the result as a whole."""
    # A stored `granular` reads back under the write name so the merge does not keep both spellings.
    current = TrackerConfig.model_validate(stored).model_dump(by_alias=True)
    consent = current["dataLayerConfig"]["cookieConsent"]
    consent["granularEnabled"] = consent.pop("granular")
    return TrackerConfig.model_validate(_deep_merge(current, _granular_under_write_name(patch)))
