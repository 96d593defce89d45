"""products: the per-site product catalog, its feed imports and how far it has read the lake

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Exact decimals: NUMERIC where there is one; SQLite (which would keep a float) stores the text.
PRICE = sa.Numeric(precision=24, scale=6).with_variant(sa.String(length=48), "sqlite")


def upgrade() -> None:
    op.create_table(
        "products",
        sa.Column("site_id", sa.String(length=36), nullable=False),
        sa.Column("product_id", sa.String(length=36), nullable=False),
        sa.Column("product_item_code", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=True),
        sa.Column("price", PRICE, nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("categories", sa.JSON(), nullable=False),
        sa.Column("stock", sa.Integer(), nullable=True),
        sa.Column("url", sa.String(length=2048), nullable=True),
        sa.Column("image", sa.String(length=2048), nullable=True),
        sa.Column("in_feed", sa.Boolean(), nullable=False),
        sa.Column("feed_imported_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("site_id", "product_id"),
        sa.UniqueConstraint("site_id", "product_item_code", name="uq_products_site_id_product_item_code"),
    )
    op.create_table(
        "product_feed_imports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("site_id", sa.String(length=36), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("file_name", sa.String(length=500), nullable=True),
        sa.Column("rows_read", sa.Integer(), nullable=False),
        sa.Column("accepted", sa.Integer(), nullable=False),
        sa.Column("created_products", sa.Integer(), nullable=False),
        sa.Column("rejected", sa.Integer(), nullable=False),
        sa.Column("rejections", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("product_feed_imports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_product_feed_imports_site_id"), ["site_id"], unique=False)
    op.create_table(
        "product_event_sync",
        sa.Column("site_id", sa.String(length=36), nullable=False),
        sa.Column("received_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("site_id"),
    )


def downgrade() -> None:
    op.drop_table("product_event_sync")
    with op.batch_alter_table("product_feed_imports", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_product_feed_imports_site_id"))
    op.drop_table("product_feed_imports")
    op.drop_table("products")
