"""``docindex.open()`` and ``Index``: the typed library face (issue #32).

The CLI and the MCP server call these methods, so a script gets exactly what
``docindex query`` computes, as objects. An ``Index`` is a handle: it remembers
where the index is (``db``) and which extra roots were named; each call
resolves the settings, opens the index, works, and closes it again, so a
handle stays valid while other processes scan, and holds no file open between
calls.

Example::

    import docindex

    index = docindex.open(roots=["docs/"])
    index.scan()
    for hit in index.query("how do I configure the port", top=3).hits:
        print(hit.path, hit.line, round(hit.score, 3), hit.snippet)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from docindex.api import commands
from docindex.models import QueryOptions
from docindex.store.location import ServerUrl, is_server_url

if TYPE_CHECKING:
    from docindex.api.access import RootGrants
    from docindex.api.records import (
        IndexStats,
        RootsListing,
        SkippedFiles,
        VacuumResult,
        Vocabulary,
    )
    from docindex.api.roots import RootChange
    from docindex.ingest.watch import BatchReport
    from docindex.models import Hit, QueryResult, ScanResult
    from docindex.models.navigation import (
        DocumentList,
        Outline,
        Related,
        Section,
        Shown,
    )
    from docindex.models.serialize import JSONObject


def open(  # noqa: A001 - the library's entry point, like sqlite3.connect / io.open
    db: str | Path | ServerUrl | None = None, *, roots: Sequence[str | Path] = ()
) -> Index:
    """A handle on an index (nothing is read or created until a call needs it).

    Args:
        db: the index file or a ``postgresql://`` URL; ``None`` finds it as the
            CLI does (``DOCINDEX_DB``, then the nearest ``.docindex/index.db``
            upward from a root or from the current folder).
        roots: folders to index besides the ones the index remembers; with no
            index yet, the first one decides where ``.docindex/`` is created.
    """
    return Index(db, roots=roots)


class Index:
    """An index of one or more folders; see the module docstring.

    Every method raises the ``docindex.DocindexError`` family for expected
    failures (no index, bad input, a busy or damaged index), never a bare
    ``sqlite3`` error.
    """

    def __init__(
        self, db: str | Path | ServerUrl | None = None, *,
        roots: Sequence[str | Path] = (),
    ) -> None:  # fmt: skip
        # A URL stays a ServerUrl: its string is masked and cannot connect (#44).
        self.db: str | ServerUrl | None = (
            db if db is None or isinstance(db, ServerUrl)
            else ServerUrl(str(db)) if is_server_url(str(db)) else str(db)
        )  # fmt: skip
        self.roots: list[str] = [str(r) for r in roots]

    def __repr__(self) -> str:
        return f"Index(db={self.db!r}, roots={self.roots!r})"

    def _roots(self) -> list[str] | None:
        return self.roots or None

    # -- writing ------------------------------------------------------------

    def scan(
        self, path: str | Path | None = None, *, force: bool = False,
        exclude: Sequence[str] = (), hidden: bool | None = None,
        follow_symlinks: bool | None = None, gitignore: bool | None = None,
        provider: str | None = None, progress: commands.ProgressArg = None,
        stop: Callable[[], bool] | None = None, ocr: bool | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> ScanResult:  # fmt: skip
        """Index new and changed files; ``path`` limits the scan to part of a root.

        Args:
            path: a file or folder inside the roots (with no index yet, a folder
                that becomes the first root).
            force: re-read files even when their size and mtime are unchanged.
            exclude: extra gitignore-style patterns to leave out.
            hidden, follow_symlinks, gitignore: the walk's rules for this scan
                (None: the settings; a flag given here is remembered for this
                index by this user on this machine, issue #44).
            provider: embedding provider for a new index (``ngram``, ``minilm``,
                ``none``).
            progress: a callback for each ``Progress`` event, or a context
                manager that yields one.
            stop: polled between files; returning True ends the scan early with
                everything finished so far committed (``result.interrupted``).
            ocr: read scanned PDF pages and images with tesseract (None: the
                ``ocr`` setting), issue #36.
            on_notice: told at once when the scan waits for another writer.
        """
        return commands.scan(
            self.db, path=None if path is None else Path(path),
            roots=self._roots(), exclude=list(exclude), force=force, hidden=hidden,
            follow_symlinks=follow_symlinks, gitignore=gitignore,
            provider=provider, progress=progress, stop=stop, ocr=ocr,
            on_notice=on_notice,
        )  # fmt: skip

    def reindex(
        self, path: str | Path | None = None, *, full: bool = False,
        provider: str | None = None, progress: commands.ProgressArg = None,
        stop: Callable[[], bool] | None = None,
    ) -> ScanResult:  # fmt: skip
        """Re-read every file (or ``path``); ``full`` rebuilds the index file."""
        return commands.reindex(
            self.db, path=None if path is None else Path(path), full=full,
            provider=provider, progress=progress, stop=stop, roots=self._roots(),
        )  # fmt: skip

    def vacuum(self, *, ocr_cache: bool = False) -> VacuumResult:
        """Merge the search index and give free pages back to the file system.

        ``ocr_cache`` also empties the OCR text cache (``$XDG_CACHE_HOME/docindex/ocr``).
        """
        return commands.vacuum(self.db, ocr_cache=ocr_cache)

    def add_root(self, path: str | Path) -> RootChange:
        """Remember ``path`` as a root (indexed by the next scan)."""
        return commands.roots_change(self.db, "add", str(path))

    def accept_root(self, path: str | Path) -> RootChange:
        """Let this user's scans on this machine read root ``path`` (issue #44)."""
        return commands.roots_change(self.db, "accept", str(path))

    def grant_root(self, root: str | Path, roles: Sequence[str]) -> RootGrants:
        """Let only ``roles`` (and the index's owner) read root ``root`` (a
        path on this machine or the root's name); a server index only (#48)."""
        from docindex.api import access

        return access.change(self.db, str(root), tuple(roles), grant=True)

    def revoke_root(self, root: str | Path, roles: Sequence[str]) -> RootGrants:
        """Take root ``root`` from ``roles``; with no grant left, every reader
        reads it again (issue #48)."""
        from docindex.api import access

        return access.change(self.db, str(root), tuple(roles), grant=False)

    def remove_root(self, path: str | Path) -> RootChange:
        """Forget root ``path`` and drop its documents (never the files)."""
        return commands.roots_change(self.db, "remove", str(path))

    def move_root(self, old: str | Path, new: str | Path) -> RootChange:
        """Point root ``old`` at folder ``new``; nothing is re-indexed."""
        return commands.roots_change(self.db, "move", str(old), str(new))

    def watch(
        self, *, debounce_ms: int = 300, on_notice: Callable[[str], None] | None = None
    ) -> Watcher:
        """Keep the index current in a background thread; iterate over its batches.

        Use as a context manager: leaving it stops the watcher (pending changes
        are applied first)::

            with index.watch() as changes:
                for batch in changes:  # BatchReport: added, updated, removed...
                    print(batch.added, batch.updated, batch.removed)
        """
        return Watcher(self, debounce_ms=debounce_ms, on_notice=on_notice)

    def run_watch(
        self, *, debounce_ms: int = 300, on_batch: Callable[[BatchReport], None],
        stop_event: threading.Event, on_notice: Callable[[str], None] | None = None,
        on_start: Callable[[Path | ServerUrl, list[str]], None] | None = None,
    ) -> None:  # fmt: skip
        """Watch in this thread until ``stop_event`` is set (what ``docindex watch`` runs)."""
        commands.watch(
            self.db, roots=self._roots(), debounce_ms=debounce_ms, on_batch=on_batch,
            stop_event=stop_event, on_notice=on_notice, on_start=on_start,
        )  # fmt: skip

    # -- reading ------------------------------------------------------------

    def query(
        self, text: str, *, top: int = 10, mode: str = "auto", files: bool = False,
        path: str | None = None, types: Sequence[str] = (),
        where: Mapping[str, str] | Sequence[tuple[str, str]] = (),
        min_score: float = 0.0, snippet_chars: int = 200, highlight: bool = True,
        explain: bool = False, per_doc: int = 2, cursor: str | None = None,
        only_roots: Sequence[str | Path] = (), cwd: Path | None = None,
    ) -> QueryResult:  # fmt: skip
        """Search the index; see ``docindex query --help`` for the query language.

        Args:
            text: plain words, ``"exact phrase"``, ``+required``, ``-excluded``.
            top: hits per page.
            mode: ``auto``, ``lexical``, ``semantic`` or ``hybrid``.
            files: one hit per document (the best chunk, the rest folded).
            path: a folder, file or glob: absolute, relative to ``cwd`` or to a
                root (``docs/``, ``docs/*.md``); outside every root is an error.
            types: document kinds (``md``, ``pdf``, ...).
            where: front-matter facets that must match (``{"lang": "en"}``).
            min_score: drop hits scoring below this.
            snippet_chars, highlight: the snippet's length and ``**`` marks.
            explain: add each hit's score parts (``hit.explain``).
            per_doc: hits one document may show in a page (0: no limit).
            cursor: ``next_cursor`` of the previous page of the same query.
            only_roots: only documents of these roots of the index.
            cwd: the folder a relative ``path`` may start from.

        Returns:
            A ``QueryResult`` whose ``hits`` carry path, 1-based line (and page,
            slide or cell), snippet, score in [0, 1] (relative to the best hit),
            coverage (the share of the query the hit holds, 0-1), chunk id and
            heading path; ``total``, ``did_you_mean`` and ``hint`` (a weak or
            empty result) describe the whole result.
        """
        options = QueryOptions(
            top=top, mode=mode, snippet_chars=snippet_chars, highlight=highlight,
            min_score=min_score, files=files, explain=explain, types=tuple(types),
            path_glob=path, where=_pairs(where), per_doc=per_doc,
            roots=tuple(str(r) for r in only_roots),
        )  # fmt: skip
        return commands.query(self.db, text, options, cursor=cursor, cwd=cwd)

    def queries(
        self, texts: Iterable[str], *, top: int = 10, mode: str = "auto",
        files: bool = False, path: str | None = None, types: Sequence[str] = (),
        where: Mapping[str, str] | Sequence[tuple[str, str]] = (),
        snippet_chars: int = 200, highlight: bool = True,
        only_roots: Sequence[str | Path] = (), cwd: Path | None = None,
    ) -> Iterator[QueryResult]:  # fmt: skip
        """Run many queries over one open index, in order (``query --queries``)."""
        options = QueryOptions(
            top=top, mode=mode, snippet_chars=snippet_chars, highlight=highlight,
            files=files, types=tuple(types), path_glob=path, where=_pairs(where),
            roots=tuple(str(r) for r in only_roots),
        )  # fmt: skip
        return commands.batch_query(self.db, texts, options, cwd=cwd)

    def outline(self, file: str, *, depth: int = 6, cwd: Path | None = None) -> Outline:
        """A document's title and headings with their lines and chunk ids."""
        return commands.outline(self.db, file, depth=depth, roots=self._roots(),
                                cwd=cwd)  # fmt: skip

    def show(self, target: str, *, context: int = 0, cwd: Path | None = None) -> Shown:
        """A chunk (``file#chunk-id``, ``file:line`` or a chunk id) and its neighbours."""
        return commands.show(self.db, target, context=context, roots=self._roots(),
                             cwd=cwd)  # fmt: skip

    def section(
        self, file: str, heading: str, *, subsections: bool = True,
        cwd: Path | None = None,
    ) -> Section:  # fmt: skip
        """The text under one heading of ``file`` (with its subsections)."""
        return commands.section(self.db, file, heading,
                                include_subsections=subsections,
                                roots=self._roots(), cwd=cwd)  # fmt: skip

    def documents(
        self, *, path: str | None = None, types: Sequence[str] = (), limit: int = 50,
        offset: int = 0, cwd: Path | None = None,
    ) -> DocumentList:  # fmt: skip
        """Indexed documents, a page at a time (``docindex list``).

        ``path`` follows the same rule as ``query(path=...)``.
        """
        return commands.list_documents(self.db, path_glob=path, types=tuple(types),
                                       limit=limit, offset=offset,
                                       roots=self._roots(), cwd=cwd)  # fmt: skip

    def related(
        self, target: str, *, top: int = 10, same_file: bool = False,
        cwd: Path | None = None,
    ) -> Related:  # fmt: skip
        """Chunks nearest by vector to a chunk, or to a file's centroid."""
        return commands.related(self.db, target, top=top, same_file=same_file,
                                roots=self._roots(), cwd=cwd)  # fmt: skip

    def warm(self) -> int:
        """Decode the index's vectors into this process now, so that the first
        ``related`` call answers as fast as the next ones (a server calls this
        at start). Kept until the index file changes. Returns how many."""
        return commands.warm(self.db, roots=self._roots())

    def stats(self) -> IndexStats:
        """Counts, size, roots, types and facets of the index."""
        return commands.stats(self.db)

    def skipped(self, *, reason: str | None = None) -> SkippedFiles:
        """Files left out of the index (or kept in part), with their reasons."""
        return commands.skipped(self.db, reason=reason)

    def list_roots(self) -> RootsListing:
        """The roots with their document counts (and a relocation, if any)."""
        return commands.roots_list(self.db)

    def settings(self, *, near: Sequence[str | Path] = ()) -> JSONObject:
        """Effective settings and where each comes from (a JSON value, as
        ``docindex config --json`` prints it); ``near``: folders to look for an
        index from when the handle names none."""
        return commands.settings(self.db, [str(p) for p in near] or None)

    def vocabulary(self) -> Vocabulary:
        """Roots, document kinds and front-matter facet values (a JSON value),
        to offer as filters; empty lists before the first scan."""
        return commands.index_vocabulary(self.db, self._roots())

    def lines_around(
        self, hits: Sequence[Hit], *, context: int = 0, whole_chunk: bool = False
    ) -> list[list[tuple[int, str]]]:
        """Each hit's line with ``context`` lines either side (or its whole chunk),
        as (line number, text), from the text the index holds."""
        return commands.hit_lines(self.db, list(hits), context,
                                  whole_chunk=whole_chunk)  # fmt: skip


def _pairs(
    where: Mapping[str, str] | Sequence[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    items = where.items() if isinstance(where, Mapping) else where
    return tuple((str(k), str(v)) for k, v in items)


class Watcher:
    """``Index.watch()``: a watcher thread whose batches are iterated over.

    Entering starts the thread; iterating yields each ``BatchReport`` (the
    catch-up scan's first); leaving stops it and re-raises its error, if any.
    """

    def __init__(
        self, index: Index, *, debounce_ms: int,
        on_notice: Callable[[str], None] | None,
    ) -> None:  # fmt: skip
        self._index = index
        self._debounce_ms = debounce_ms
        self._on_notice = on_notice
        self._stop = threading.Event()
        import queue  # a query never needs it (#46)

        self._batches: queue.SimpleQueue[BatchReport | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="docindex-watch")  # fmt: skip

    def _run(self) -> None:
        try:
            self._index.run_watch(debounce_ms=self._debounce_ms,
                                  on_batch=self._batches.put, stop_event=self._stop,
                                  on_notice=self._on_notice)  # fmt: skip
        except BaseException as exc:  # handed to the iterating thread
            self._error = exc
        finally:
            self._batches.put(None)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()
        if self._error is not None and kind is None:
            raise self._error

    def __iter__(self) -> Iterator[BatchReport]:
        while True:
            batch = self._batches.get()
            if batch is None:
                if self._error is not None:
                    error, self._error = self._error, None
                    raise error
                return
            yield batch

    def stop(self) -> None:
        """Apply the pending changes, then stop the watcher thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
