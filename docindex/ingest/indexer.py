"""walk -> extract -> segment -> tokenize -> embed -> store; incremental by content hash.

The names other modules and tests import, from where they now live (issue
#32, item 4: the 930-line module split by concern):

- ``scanner``: ``scan``, the driver (walk, hand changed files out, prune);
- ``prepare``: ``Job``, ``Prepared``, ``prepare``: one file read, extracted,
  segmented, tokenised and embedded in a worker process;
- ``writer``: the single writer that stores prepared files within the caps,
  and ``embed_pending`` (deferred vectors);
- ``removal``: ``remove_document``, ``document_fts`` (contentless FTS rows
  are deleted by replaying their tokens);
- ``settings``: ``check_settings``, ``embedder_params``, ``resolve_scope``.

Files are prepared in worker processes when there is enough work; results
come back in walk order, so the index is identical whether one core or two
built it.
"""

from __future__ import annotations

from docindex.embed.choice import embedder_for as _embedder
from docindex.ingest.analyze import fts_row
from docindex.ingest.prepare import (
    Job,
    Prepared,
    StopFn,
    ocr_settings,
    prepare,
    prepare_bulk,
)
from docindex.ingest.removal import (
    PENDING_FTS,
    document_fts,
    remove_document,
    restore_pending_fts,
)
from docindex.ingest.scanner import scan
from docindex.ingest.settings import (
    TOKENIZER_VERSION,
    check_settings,
    embedder_params,
    pin_roots,
    resolve_scope,
    root_pins,
)
from docindex.ingest.writer import EMBED_COMMIT, embed_pending
from docindex.models import Progress
from docindex.text.fields import embed_input

_Job = Job  # the name before issue #18

__all__ = [
    "EMBED_COMMIT",
    "TOKENIZER_VERSION",
    "Job",
    "Prepared",
    "Progress",
    "StopFn",
    "_Job",
    "_embedder",
    "check_settings",
    "document_fts",
    "embed_input",
    "restore_pending_fts",
    "PENDING_FTS",
    "ocr_settings",
    "embed_pending",
    "embedder_params",
    "fts_row",
    "pin_roots",
    "prepare",
    "prepare_bulk",
    "remove_document",
    "resolve_scope",
    "root_pins",
    "scan",
]
