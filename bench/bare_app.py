"""The ceiling: a bare FastAPI endpoint that only parses and validates the same event batches."""

from __future__ import annotations

from fastapi import FastAPI

from ingest.schemas import EventBatch

app = FastAPI()


@app.post("/api/v1/public/sites/{siteKey}/events/batch")
async def events_batch(siteKey: str, batch: EventBatch) -> dict:
    return {"accepted": len(batch["events"]), "rejected": [], "duplicates": 0}
