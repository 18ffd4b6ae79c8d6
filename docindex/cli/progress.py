"""A rich progress bar on stderr for scans, imports and exports (CLI side only).

Every long operation shows what it does, how far it is (done of total), its
rate and the time left (issue #45: a neural scan of the FastAPI docs ran 873 s
in silence). Rich redraws ten times a second, so the rate, the time left and
the spinner move even while one big file (OCR, a long PDF) holds the workers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from docindex.models import Progress

if TYPE_CHECKING:
    from rich.progress import Progress as Bar
    from rich.progress import Task, TaskID
    from rich.text import Text

#: What each phase is called on the bar, and what it counts.
PHASES = {
    "walk": ("walking", "files"),
    "index": ("indexing", "files"),
    "embed": ("embedding", "segments"),
    "restore": ("restoring search rows", "documents"),
    "import": ("importing", "documents"),
    "export": ("exporting", "documents"),
}


def _rate(task: Task) -> Text:
    """``12.3 files/s`` once rich has two samples to measure with."""
    from rich.text import Text

    speed = task.finished_speed or task.speed
    unit = task.fields.get("unit", "items")
    if speed is None:
        return Text(f"… {unit}/s", style="dim")
    shown = f"{speed:.1f}" if speed < 100 else f"{speed:.0f}"
    return Text(f"{shown} {unit}/s", style="cyan")


class ScanProgress:
    """Context manager yielding an ``on_progress`` callback (a no-op when disabled)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Bar | None = None
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> Callable[[Progress], None] | None:
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task: Task) -> Text:
                return _rate(task)

        class EtaColumn(TimeRemainingColumn):
            def render(self, task: Task) -> Text:  # nothing while the total is unknown
                if task.total is None:
                    return Text("")
                return Text.assemble(("eta ", "dim"), super().render(task))

        self._bar = RichProgress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
            MofNCompleteColumn(), RateColumn(), EtaColumn(),
            TextColumn("{task.fields[path]}", style="dim"),
            console=Console(stderr=True), transient=True,
        )  # fmt: skip
        self._bar.start()
        return self._update

    def _update(self, event: Progress) -> None:
        assert self._bar is not None  # set by __enter__
        path = event.path if len(event.path) < 40 else "…" + event.path[-39:]
        desc, unit = PHASES.get(event.phase, (event.phase, "queries"))  # eval
        task = self._tasks.get(event.phase)
        for phase, other in self._tasks.items():  # one phase shows at a time
            if phase != event.phase:
                self._bar.update(other, visible=False)
        if task is None:
            task = self._bar.add_task(desc, total=event.total, path=path, unit=unit)
            self._tasks[event.phase] = task
        self._bar.update(task, completed=event.done, total=event.total, path=path,
                         visible=True)  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
