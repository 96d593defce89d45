"""Config store tables (SQLAlchemy Core). Changes here need a migration in ``migrations/versions``."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)

metadata = MetaData()


class UTCDateTime(TypeDecorator):
    """``DateTime(timezone=True)`` that stores UTC and answers aware UTC datetimes on every backend.

    SQLite keeps no offset: without this, 12:00+02:00 would be stored as 12:00 and read back as
    12:00 UTC. Naive values are taken to be UTC already."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return value
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class ExactDecimal(TypeDecorator):
    """An exact decimal amount: ``NUMERIC(24, 6)`` where the database has one; on SQLite, which would keep
    a float, the decimal's text. Always answers a ``Decimal`` (trailing zeros removed)."""

    impl = Numeric(24, 6)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(48))
        return dialect.type_descriptor(Numeric(24, 6, asdecimal=True))

    def process_bind_param(self, value: Decimal | str | None, dialect) -> Decimal | str | None:
        if value is None:
            return None
        value = Decimal(value)
        return format(value, "f") if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect) -> Decimal | None:
        if value is None:
            return None
        exact = Decimal(str(value))
        return exact.quantize(Decimal(1)) if exact == exact.to_integral() else exact.normalize()


def _created_at() -> Column:
    return Column("created_at", UTCDateTime(), nullable=False)


organizations = Table(
    "organizations",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("subscription_status", String(20), nullable=False),
    Column("subscription_period_end", UTCDateTime(), nullable=True),
    _created_at(),
)

users = Table(
    "users",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("organization_id", String(36), ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    Column("password_hash", String(200), nullable=False),
    Column("role", String(20), nullable=False),
    Column("is_platform_admin", Boolean, nullable=False, default=False),
    Column("email_verified_at", UTCDateTime(), nullable=True),
    Column("mfa_secret", String(64), nullable=True),
    Column("mfa_enabled", Boolean, nullable=False, default=False),
    Column("mfa_last_timestep", Integer, nullable=True),
    _created_at(),
)

refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(36), ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("family_id", String(36), nullable=False, index=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("rotated_at", UTCDateTime(), nullable=True),
    Column("revoked_at", UTCDateTime(), nullable=True),
    _created_at(),
)

mfa_backup_codes = Table(
    "mfa_backup_codes",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("user_id", String(36), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("code_hash", String(200), nullable=False),
    Column("used_at", UTCDateTime(), nullable=True),
    _created_at(),
)

sites = Table(
    "sites",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("organization_id", String(36), ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("domain", String(253), nullable=False),
    Column("site_key", String(64), nullable=False, unique=True),
    Column("currency", String(3), nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("is_verified", Boolean, nullable=False, default=False),
    Column("verified_at", UTCDateTime(), nullable=True),
    Column("verification_token", String(64), nullable=False),
    Column("tracking_config", JSON, nullable=False),
    _created_at(),
    Column("updated_at", UTCDateTime(), nullable=False),
    Index("ix_sites_organization_id", "organization_id"),
)

site_api_keys = Table(
    "site_api_keys",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("scopes", JSON, nullable=False),
    Column("prefix", String(32), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("last_used_at", UTCDateTime(), nullable=True),
    Column("revoked_at", UTCDateTime(), nullable=True),
    _created_at(),
    UniqueConstraint("prefix", name="uq_site_api_keys_prefix"),
)

activity_logs = Table(
    "activity_logs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("organization_id", String(36), nullable=False, index=True),
    Column("site_id", String(36), nullable=True, index=True),
    Column("user_id", String(36), nullable=True),
    Column("action", String(100), nullable=False),
    Column("details", JSON, nullable=True),
    Column("message", Text, nullable=True),
    _created_at(),
)

identity_links = Table(
    "identity_links",
    metadata,
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), primary_key=True),
    Column("visitor_id", String(128), primary_key=True),
    Column("user_id", String(128), primary_key=True),
    _created_at(),
)

funnel_definitions = Table(
    "funnel_definitions",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=True),
    Column("steps", JSON, nullable=False),
    Column("window_seconds", Integer, nullable=False),
    Column("order", String(16), nullable=False),
    Column("created_by", String(36), nullable=True),
    _created_at(),
    Column("updated_at", UTCDateTime(), nullable=False),
)

saved_queries = Table(
    "saved_queries",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=True),
    Column("query", Text, nullable=False),
    Column("dialect", String(32), nullable=False),
    Column("parameters", JSON, nullable=False),
    Column("created_by", String(36), nullable=True),
    _created_at(),
    Column("updated_at", UTCDateTime(), nullable=False),
    UniqueConstraint("site_id", "name", name="uq_saved_queries_site_id_name"),
)

# The product catalog of a site: products from feed imports and products seen in events and orders.
# `product_id` is `product_id_for(site_id, product_item_code)` (deterministic); feed values win over
# what events carry, which only fills what the feed left empty.
products = Table(
    "products",
    metadata,
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), primary_key=True),
    Column("product_id", String(36), primary_key=True),
    Column("product_item_code", String(255), nullable=False),
    Column("name", String(500), nullable=True),
    Column("price", ExactDecimal(), nullable=True),
    Column("currency", String(3), nullable=False),
    Column("categories", JSON, nullable=False),
    Column("stock", Integer, nullable=True),
    Column("url", String(2048), nullable=True),
    Column("image", String(2048), nullable=True),
    Column("in_feed", Boolean, nullable=False, default=False),
    Column("feed_imported_at", UTCDateTime(), nullable=True),
    Column("first_seen_at", UTCDateTime(), nullable=True),
    Column("last_seen_at", UTCDateTime(), nullable=True),
    # The event time of the observation each of name, price, categories, url and image came from (ISO
    # 8601 by field; a field absent here: from the feed, or stored before these times were kept).
    Column("seen_at", JSON, nullable=True),
    _created_at(),
    Column("updated_at", UTCDateTime(), nullable=False),
    UniqueConstraint("site_id", "product_item_code", name="uq_products_site_id_product_item_code"),
)

# One row per product-feed import: what it read, kept and refused (by reason, with an example each).
product_feed_imports = Table(
    "product_feed_imports",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("source", String(16), nullable=False),
    Column("format", String(8), nullable=False),
    Column("file_name", String(500), nullable=True),
    Column("rows_read", Integer, nullable=False),
    Column("accepted", Integer, nullable=False),
    Column("created_products", Integer, nullable=False),
    Column("rejected", Integer, nullable=False),
    Column("rejections", JSON, nullable=False),
    Column("created_by", String(36), nullable=True),
    _created_at(),
)

# How far the catalog has read the lake's product events and orders (by the time they were received).
product_event_sync = Table(
    "product_event_sync",
    metadata,
    Column("site_id", String(36), ForeignKey("sites.id", ondelete="CASCADE"), primary_key=True),
    Column("received_until", UTCDateTime(), nullable=False),
    Column("synced_at", UTCDateTime(), nullable=False),
)
