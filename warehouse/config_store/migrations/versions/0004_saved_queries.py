"""saved queries: a site's named ad-hoc SQL with declared parameters

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "saved_queries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("site_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("dialect", sa.String(length=32), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("site_id", "name", name="uq_saved_queries_site_id_name"),
    )
    with op.batch_alter_table("saved_queries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_saved_queries_site_id"), ["site_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("saved_queries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_saved_queries_site_id"))
    op.drop_table("saved_queries")
