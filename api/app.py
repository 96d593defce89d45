"""The application factory."""

from __future__ import annotations

from contextlib import asynccontextmanager
from functools import partial

import redis
from fastapi import Depends, FastAPI
from fastapi.responses import Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from aisle.gc_tuning import tune_for_serving
from aisle.settings import Settings
from api import docs, openapi_bodies
from api.admin.routes import router as admin_router
from api.analytics.attribution.routes import router as attribution_router
from api.analytics.categories.routes import router as categories_router
from api.analytics.cohorts.routes import router as cohorts_router
from api.analytics.consent.routes import router as consent_router
from api.analytics.correlations.routes import router as correlations_router
from api.analytics.funnel_definitions.routes import router as funnel_definitions_router
from api.analytics.funnels.routes import router as funnels_router
from api.analytics.journeys.routes import router as journeys_router
from api.analytics.overview.routes import router as overview_router
from api.analytics.products.routes import FEED_PATH
from api.analytics.products.routes import router as products_router
from api.analytics.revenue.routes import router as revenue_router
from api.analytics.search.routes import router as search_router
from api.analytics.site_events.routes import router as site_events_router
from api.analytics.sql.routes import router as sql_router
from api.analytics.sql.schemas import document_timeout_limit
from api.auth.routes import router as auth_router
from api.body_limit import BodyLimit
from api.errors import ERROR_RESPONSE_SCHEMA, install_error_handlers
from api.head_requests import HeadAsGet
from api.health.routes import router as health_router
from api.hot_path import AisleApp, HotPath
from api.media_type import json_bodies_only
from api.observability import BatchWorkerMetrics, Metrics, RequestObserver, configure_logging
from api.public.cors import PublicCors
from api.public.routes import CONSENT_PATH
from api.public.routes import router as public_router
from api.sites.routes import router as sites_router
from api.tracking.routes import accept_event_batch
from api.tracking.routes import private as tracking_router
from api.tracking.routes import public as public_ingest_router
from api.tracking.service import EventBatches
from ingest.batch_worker import BatchWorkers
from ingest.lake_readers import ReaderPresence
from ingest.service import Ingest
from jobs.mail import Outbox
from jobs.scheduler import start_scheduler
from queries.adhoc.sandbox import Sandbox
from warehouse.config_store.store import create_store_engine, migrate
from warehouse.engine import Engine
from warehouse.hotstate import open_hot_state

API_PREFIX = "/api/v1"
PUBLIC_PREFIX = f"{API_PREFIX}/public/"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    settings.prepare_data_dir()
    configure_logging(json=settings.log_json)
    store = create_store_engine(settings.resolved_database_url)
    migrate(store)

    ingest = Ingest(
        data_dir=settings.data_dir,
        flush_interval_seconds=settings.flush_interval_seconds,
        events_flusher_process=settings.events_flusher_process,
        stream_url=settings.stream_url,
        # On a Redis log the servers only accept; `aisle flush` moves the log to the lake and compacts.
        flush_in_background=settings.stream_url is None,
        order_window_seconds=settings.order_duplicate_window_seconds,
    )
    engine = Engine(ingest.lake)

    # A server of a Redis log says so and records the lake writer's marks in its data directory, so
    # that a writer given a copy of the directory knows it (``ingest.lake_readers``). Registered
    # before the server accepts a row.
    presence = (
        ReaderPresence(
            redis.Redis.from_url(settings.stream_url, socket_timeout=3, socket_connect_timeout=3),
            settings.data_dir,
        )
        if settings.stream_url is not None
        else None
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if presence is not None:
            presence.start()
        ingest.start()
        if batch_workers is not None:
            await batch_workers.start()
        scheduler = None
        if ingest.flush_in_background:
            scheduler = start_scheduler(
                ingest=ingest,
                compaction_interval_seconds=settings.compaction_interval_seconds,
                engine=engine,
                store=store,
            )
        app.state.scheduler = scheduler
        tune_for_serving()
        try:
            yield
        finally:
            if batch_workers is not None:
                await batch_workers.stop()
            if scheduler is not None:
                scheduler.shutdown(wait=True)
            ingest.stop()
            if presence is not None:
                presence.stop()
            engine.close()
            store.dispose()

    app = AisleApp(
        title="Aisle",
        version="0.1.0",
        description="Storefront personalization and analytics. Errors always use the envelope "
        '`{"error": {"code", "message", "details"}}`.',
        openapi_url=f"{API_PREFIX}/openapi.json",
        # Served by api.docs from the installed Swagger UI, not FastAPI's page that loads it from a CDN.
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        lifespan=lifespan,
        dependencies=[Depends(json_bodies_only)],
        responses={400: ERROR_RESPONSE_SCHEMA, 401: ERROR_RESPONSE_SCHEMA, 403: ERROR_RESPONSE_SCHEMA},
    )
    hot = open_hot_state(settings.redis_url)
    batch_workers = BatchWorkers(settings.event_batch_workers) if settings.event_batch_workers else None
    event_batches = EventBatches(
        store=store, ingest=ingest, workers=batch_workers, hot=hot, settings=settings
    )
    # What the typed dependencies of `api.deps` hand the routes (and what tests reach for).
    app.state.settings = settings
    app.state.store = store
    app.state.hot = hot
    app.state.ingest = ingest
    app.state.batch_workers = batch_workers
    app.state.event_batches = event_batches
    app.state.engine = engine
    app.state.sql_sandbox = Sandbox(
        memory_limit=settings.sql_memory_limit,
        threads=settings.sql_threads,
        max_concurrent=settings.sql_max_concurrent,
    )
    app.state.outbox = Outbox(
        outbox_dir=settings.outbox_dir, smtp_url=settings.smtp_url, sender=settings.mail_from
    )
    metrics = Metrics()
    app.state.metrics = metrics
    if batch_workers is not None:
        metrics.registry.register(BatchWorkerMetrics(batch_workers))

    install_error_handlers(app)
    docs.install(app, docs_url=f"{API_PREFIX}/docs", openapi_url=f"{API_PREFIX}/openapi.json")
    # Routes are matched in order: the storefront's routes, ingestion by far the busiest, come first.
    # Funnel definitions come before funnels so `/funnels/definitions/...` is never read as a site id.
    for router in (
        public_ingest_router,
        public_router,
        health_router,
        auth_router,
        sites_router,
        admin_router,
        tracking_router,
        funnel_definitions_router,
        funnels_router,
        cohorts_router,
        journeys_router,
        overview_router,
        site_events_router,
        sql_router,
        consent_router,
        revenue_router,
        attribution_router,
        categories_router,
        products_router,
        search_router,
        correlations_router,
    ):
        app.include_router(router, prefix=API_PREFIX)
    openapi_bodies.install(
        app,
        error_response=ERROR_RESPONSE_SCHEMA,
        settings_limits=[partial(document_timeout_limit, max_timeout_ms=settings.sql_max_timeout_ms)],
    )

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    # Ingestion and product feeds read their bodies themselves, within limits of their own (2 MiB once
    # inflated, 50 MiB); every other body is held to one limit. Inside the CORS and request-log layers,
    # so its 413 is readable by a storefront and logged like any answer.
    own_limits = [
        *(
            f"{API_PREFIX}{route.path}"
            for router in (public_ingest_router, tracking_router)
            for route in router.routes
            if isinstance(route, APIRoute)
        ),
        f"{API_PREFIX}{public_router.prefix}{CONSENT_PATH}",
    ]
    app.add_middleware(HeadAsGet)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_request_body_bytes,
        exempt=[*own_limits, f"{API_PREFIX}{products_router.prefix}{FEED_PATH}"],
    )
    app.add_middleware(PublicCors, prefix=PUBLIC_PREFIX)
    app.add_middleware(RequestObserver, metrics=metrics)
    app.hot_path = HotPath(
        app,
        prefix=f"{PUBLIC_PREFIX}sites/",
        suffix="/events/batch",
        endpoint=partial(accept_event_batch, event_batches),
        metrics=metrics,
    )
    return app
