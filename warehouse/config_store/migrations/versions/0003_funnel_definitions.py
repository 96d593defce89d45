"""funnel definitions: saved funnels of a site

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "funnel_definitions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("site_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("window_seconds", sa.Integer(), nullable=False),
        sa.Column("order", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("funnel_definitions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_funnel_definitions_site_id"), ["site_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("funnel_definitions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_funnel_definitions_site_id"))
    op.drop_table("funnel_definitions")
