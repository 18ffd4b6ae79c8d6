"""A rich progress bar on stderr for scans (CLI side only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from docindex.models import Progress

if TYPE_CHECKING:
    from rich.progress import Progress as Bar
    from rich.progress import TaskID


class ScanProgress:
    """Context manager yielding an ``on_progress`` callback (a no-op when disabled)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Bar | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Callable[[Progress], None] | None:
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[path]}", style="dim"),
            console=Console(stderr=True), transient=True,
        )  # fmt: skip
        self._bar.start()
        self._task = self._bar.add_task("walking", total=None, path="")
        return self._update

    def _update(self, event: Progress) -> None:
        path = event.path if len(event.path) < 50 else "…" + event.path[-49:]
        desc = {
            "walk": "walking", "embed": "embedding",
            "restore": "restoring search rows",
        }.get(event.phase, "indexing")  # fmt: skip
        assert self._bar is not None and self._task is not None  # set by __enter__
        self._bar.update(self._task, description=desc, completed=event.done,
                         total=event.total, path=path)  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
