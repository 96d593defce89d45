"""Ad-hoc SQL for the data team: one guarded, read-only query over one site's views, in a sealed DuckDB
in a worker process (docs/sql.md is the user's side).

A query goes, in order, through:

- ``guard``: :func:`~queries.adhoc.guard.guard` reads it in its dialect (``parse``), checks the tree
  against the rules (``check`` applying ``policy``), writes it as DuckDB (``translate``), reads that
  back and checks it again; what runs is the SQL generated from the tree that passed.
- ``run``: :func:`~queries.adhoc.run.execute` binds its named parameters and hands it to a worker
  (``process``), which opens the ``sandbox`` (a DuckDB that reads only the site's files, its
  configuration locked) and runs it under a watchdog.
- ``formats``: the answer as JSON, CSV, Parquet or a text table.

Every failure on the way is an :class:`~queries.adhoc.errors.SqlError` with a stable ``code``.
"""
