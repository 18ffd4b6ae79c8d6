"""PPTX extractor: one citable :class:`Unit` per slide, with python-pptx.

A slide's text is its title first, then every other shape in shape-tree order
(text frames, tables one row per line with `` | `` between cells, charts: title,
axis titles, series names and categories; group shapes recursively), then the
speaker notes.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from lxml.etree import _Element as Element
    from pptx.chart.chart import Chart
    from pptx.shapes.autoshape import Shape
    from pptx.shapes.base import BaseShape
    from pptx.shapes.graphframe import GraphicFrame
    from pptx.text.text import TextFrame

from docindex.ingest.extract._zipguard import core_title, run_guarded
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.pdf import normalize_text
from docindex.models import Extracted, Unit

#: Group shapes nested deeper than this are not read (hostile files only).
MAX_GROUP_DEPTH = 32
#: Series names or categories read from one chart (a chart of every day of a year).
MAX_CHART_NAMES = 200


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a presentation, one unit per slide that has text.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: archive and text bounds for this file.

    Returns:
        Units with ``slide`` set (1-based; slides without text are left out, and
        a presentation without any text gives one empty unit), ``kind="pptx"``
        and a title from the core properties or else the first slide's title.

    Raises:
        ExtractionError: ``zip-bomb``/``corrupt``/``encrypted`` from the archive
            checks, ``corrupt`` for anything python-pptx cannot read.
    """
    return run_guarded("PPTX", data, limits, _extract)


def _extract(data: bytes, limits: ExtractLimits) -> Extracted:
    from pptx import Presentation

    prs = Presentation(io.BytesIO(data))
    units: list[Unit] = []
    meta: dict[str, str] = {}
    first_title: str | None = None
    chars = 0
    for number, slide in enumerate(prs.slides, start=1):
        if chars >= limits.max_text_chars:
            meta["truncated"] = f"chars:{limits.max_text_chars}"
            break
        title_shape = slide.shapes.title
        title = _shape_text(title_shape) if title_shape is not None else ""
        if number == 1:
            first_title = " ".join(title.split()) or None
        lines = [title] if title.strip() else []
        skip = title_shape.element if title_shape is not None else None
        _shape_lines(slide.shapes, lines, skip, 0)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                lines.append(notes.text)
        text = normalize_text("\n".join(lines))
        if text.strip():
            units.append(Unit(text=text, slide=number))
            chars += len(text)
    if not units:
        units.append(Unit(text=""))
    return Extracted(
        units=tuple(units),
        title=core_title(prs.part.package) or first_title,
        kind="pptx",
        meta=meta,
    )


def _shape_lines(
    shapes: Iterable[BaseShape], lines: list[str], skip: Element | None, depth: int
) -> None:
    """Append the text of ``shapes`` (in shape-tree order) to ``lines``."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if skip is not None and shape.element is skip:
            continue
        if isinstance(shape, GroupShape):
            if depth < MAX_GROUP_DEPTH:
                _shape_lines(shape.shapes, lines, skip, depth + 1)
            continue
        if getattr(shape, "has_table", False):
            for row in cast("GraphicFrame", shape).table.rows:
                cells = [
                    " ".join(_frame_text(cell.text_frame).split()) for cell in row.cells
                ]
                while cells and not cells[-1]:  # trailing empty cells are noise
                    cells.pop()
                if cells:
                    lines.append(" | ".join(cells))
        elif getattr(shape, "has_chart", False):
            lines.extend(_chart_lines(cast("GraphicFrame", shape).chart))
        else:
            text = _shape_text(shape)
            if text.strip():
                lines.append(text)


def _chart_lines(chart: Chart) -> list[str]:
    """A chart's words: its title, axis titles, series names and categories (#38).

    Series and categories are one line each, `` | `` between names, as table
    rows are; numbers (values, date serials) are left out. A chart python-pptx
    cannot read gives what was read before the failure.
    """
    lines: list[str] = []
    try:
        if chart.has_title and chart.chart_title.has_text_frame:
            lines.append(_frame_text(chart.chart_title.text_frame))
        for axis in ("category_axis", "value_axis"):
            with contextlib.suppress(Exception):  # pie charts have no axes
                found = getattr(chart, axis)
                if found.has_title and found.axis_title.has_text_frame:
                    lines.append(_frame_text(found.axis_title.text_frame))
        series: list[str] = []
        categories: list[str] = []
        for plot in chart.plots:
            series += [s.name for s in plot.series if s.name]
            with contextlib.suppress(Exception):
                categories += [str(c) for c in plot.categories]
        for names in (series, categories):
            words = [
                " ".join(n.split())
                for n in dict.fromkeys(names)
                if n.strip() and not _number(n)
            ][:MAX_CHART_NAMES]
            if words:
                lines.append(" | ".join(words))
    except Exception:  # a damaged chart part: keep the slide's other text
        pass
    return [line for line in lines if line.strip()]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _shape_text(shape: BaseShape) -> str:
    """The text of a shape with a text frame, or ``""``."""
    if not getattr(shape, "has_text_frame", False):
        return ""
    return _frame_text(cast("Shape", shape).text_frame)


def _frame_text(frame: TextFrame) -> str:
    # python-pptx renders a line break (a:br) as a vertical tab.
    text: str = frame.text
    return text.replace("\v", "\n")
