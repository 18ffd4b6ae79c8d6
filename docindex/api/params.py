"""The argument types every command of ``api`` takes (issue #49 split ``commands``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from docindex.models import Progress
from docindex.store.location import ServerUrl

ProgressCallback = Callable[[Progress], None]
ProgressArg = ProgressCallback | AbstractContextManager[ProgressCallback | None] | None
# The settings a command-line flag may override (Config field -> value).
Overrides = dict[str, object]
# An index: a file path, a ServerUrl (never its masked string, #44), or None
# to find it by the usual rule.
DbArg = str | Path | ServerUrl | None
