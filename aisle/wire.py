"""The wire's one model base: camelCase JSON, snake_case Python. Response models of every layer (the
query library's reports, ingest's answers, the API's bodies) derive from it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# Also the config of wire TypedDicts (``pydantic.with_config``), which cannot derive from a model.
CAMEL_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class CamelModel(BaseModel):
    model_config = ConfigDict(**CAMEL_CONFIG, from_attributes=True)
