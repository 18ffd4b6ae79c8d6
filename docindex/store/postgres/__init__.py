"""The PostgreSQL index: a team's shared index on a server (issue #34).

``PgStore`` implements ``store.interface.Index`` on a PostgreSQL database,
selected by a ``postgresql://`` URL (``store.location``). ``store.py`` holds
the connection's life, transactions and upkeep; ``writes.py`` the writes
(segment-id blocks from a sequence, upserts, COPY through ``batch.py``);
``roots.py`` the settings and the roots (a name, a path per host);
``search.py`` the reads (FTS5's bm25 over stored term frequencies,
``ranking.py``); ``access.py`` per-root grants and standbys (#48);
``connection.py`` the driver and its errors; ``filters.py`` the document
filters; ``schema.py`` the migrations. This ``__init__`` only names what the
rest of docindex uses: no module here imports it (issue #49).
"""

from docindex.store.postgres.connection import (
    READ_ONLY_HINT,
    scratch_schema,
    translate,
)
from docindex.store.postgres.filters import filter_sql, glob_regex
from docindex.store.postgres.store import PgStore

__all__ = ["READ_ONLY_HINT", "PgStore", "filter_sql", "glob_regex", "scratch_schema",
           "translate"]  # fmt: skip
