"""One settings class for the whole service (environment prefix ``AISLE_``)."""

from __future__ import annotations

import secrets
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AISLE_", extra="ignore")

    data_dir: Path = Path("data")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL of the config store; SQLite in the data dir when unset."
    )
    redis_url: str | None = Field(
        default=None, description="Hot state (throttles, windows) in Redis when set."
    )
    public_url: str = "http://127.0.0.1:8000"

    jwt_secret: str | None = Field(
        default=None, description="HMAC key for tokens; generated once and kept in the data dir when unset."
    )
    access_token_ttl_seconds: int = 900
    refresh_token_ttl_seconds: int = 30 * 24 * 3600
    mfa_challenge_ttl_seconds: int = 300
    email_verification_ttl_seconds: int = 48 * 3600

    smtp_url: str | None = Field(
        default=None, description="smtp://user:pass@host:port; .eml files when unset."
    )
    mail_from: str = "Aisle <no-reply@aisle.example>"

    login_max_failures_per_account: int = 5
    login_max_attempts_per_address: int = 30
    login_window_seconds: int = 900
    registrations_per_address_per_hour: int = 20

    public_read_limit_per_minute: int = 300
    max_request_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1,
        description="Largest request body of any route but ingestion and product feeds, which keep limits "
        "of their own; a larger one answers 413 BODY_TOO_LARGE.",
    )
    visitor_batches_per_minute: int = Field(default=120, description="Event batches per visitor and minute.")
    orders_per_visitor_per_minute: int = Field(default=10, description="Orders per visitor and minute.")
    order_duplicate_window_seconds: int = Field(
        default=24 * 3600, description="A repeated orderId answers 409."
    )
    durable_log: Literal["file", "redis"] = Field(
        default="file",
        description="Where accepted rows are logged until they reach the lake: `file`, segment files in the "
        "data directory (one `aisle serve` per data directory), or `redis`, a Redis Stream per table at "
        "AISLE_REDIS_URL (any number of `aisle serve` sharing the data directory, and one `aisle flush`).",
    )
    log_redis_url: str | None = Field(
        default=None,
        description="The Redis log's own Redis, when it is not AISLE_REDIS_URL's: it must sync its "
        "append-only file before answering (`appendfsync always`), which the hot state's need not.",
    )
    flush_interval_seconds: float = Field(default=1.0, description="How often accepted rows reach the lake.")
    events_flusher_process: bool = Field(
        default=True,
        description="Flush events from a process of their own (off the request thread's GIL); "
        "false keeps every flusher a thread of the server.",
    )
    event_batch_workers: int = Field(
        default=1,
        ge=0,
        description="Processes that decode, validate and encode the storefront's event batches beside the "
        "server's event loop (one per spare core); 0 does it all in the server's process.",
    )
    compaction_interval_seconds: float = Field(
        default=600.0, description="How often small lake files are merged."
    )

    sql_memory_limit: str = Field(default="1GB", description="Memory one ad-hoc SQL query may use.")
    sql_threads: int = Field(default=2, ge=1, description="Threads one ad-hoc SQL query may use.")
    sql_max_concurrent: int = Field(default=4, ge=1, description="Ad-hoc SQL queries running at once.")
    sql_default_timeout_ms: int = Field(default=10_000, ge=100, description="Ad-hoc SQL time limit.")
    sql_max_timeout_ms: int = Field(default=60_000, ge=100, description="Largest timeoutMs a caller may ask.")

    # Domain verification looks at the real domain; tests point these at loopback.
    verification_dns_server: str | None = None
    verification_http_base: str | None = None
    verification_timeout_seconds: float = 5.0

    log_json: bool = True

    @model_validator(mode="after")
    def _redis_log_needs_redis(self) -> Settings:
        if self.durable_log == "redis" and not self.redis_url:
            raise ValueError("AISLE_DURABLE_LOG=redis needs AISLE_REDIS_URL")
        return self

    @property
    def stream_url(self) -> str | None:
        """Redis for the durable log, when it is there."""
        return (self.log_redis_url or self.redis_url) if self.durable_log == "redis" else None

    @cached_property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'aisle.db').resolve()}"

    @cached_property
    def signing_key(self) -> str:
        if self.jwt_secret:
            return self.jwt_secret
        key_file = self.data_dir / "secret.key"
        if not key_file.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            key_file.write_text(secrets.token_urlsafe(48))
            key_file.chmod(0o600)
        return key_file.read_text().strip()

    @property
    def outbox_dir(self) -> Path:
        return self.data_dir / "outbox"

    def prepare_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.outbox_dir.mkdir(parents=True, exist_ok=True)
