"""Alembic environment: the connection is handed in by ``warehouse.config_store.store.migrate``."""

from alembic import context

from warehouse.config_store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
