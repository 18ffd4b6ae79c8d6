"""XLSX extractor: one citable :class:`Unit` per worksheet, with openpyxl.

Each non-empty row becomes one line: its non-empty cell values joined by
`` | ``. ``Unit.line_cells[i]`` is the reference of the first non-empty cell of
line ``i + 1``, so a hit can cite ``Sheet1!A12``. Cached values are read, not
formulas (``data_only=True``), and the workbook is streamed (``read_only=True``)
so a sheet is never loaded whole.
"""

from __future__ import annotations

import datetime as dt
import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

from docindex.ingest.extract._zipguard import run_guarded
from docindex.ingest.extract.limits import ExtractLimits
from docindex.models import Extracted, Unit

#: Cells visited per sheet, counted per allowed row. A hostile sheet can declare
#: one cell in column XFD on every row, which openpyxl pads with 16,384 empty
#: cells; this budget stops such a sheet long before the wall-clock timeout.
CELLS_PER_ROW_BUDGET = 256

# Characters that str.splitlines() treats as line ends: one row must stay one line
# or line_cells would point at the wrong cells.
_LINE_BREAKS = str.maketrans(
    dict.fromkeys(map(ord, "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"), " ")
)


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a workbook, one unit per worksheet that has values.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: archive, row and text bounds for this file.

    Returns:
        Units with ``sheet`` and ``line_cells`` set, ``kind="xlsx"``, the
        core-properties title if any, and ``meta["truncated"]`` naming the sheets
        cut at ``limits.max_sheet_rows`` (``"Sheet1:100000"``, ``;``-separated).

    Raises:
        ExtractionError: ``zip-bomb``/``corrupt``/``encrypted`` from the archive
            checks, ``corrupt`` for anything openpyxl cannot read.
    """
    return run_guarded("XLSX", data, limits, _extract)


def _extract(data: bytes, limits: ExtractLimits) -> Extracted:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        units: list[Unit] = []
        truncated: list[str] = []
        chars = 0
        for sheet in workbook.worksheets:
            if chars >= limits.max_text_chars:
                truncated.append(f"chars:{limits.max_text_chars}")
                break
            lines, cells, cut = _read_sheet(
                sheet, limits, limits.max_text_chars - chars
            )
            if cut:
                truncated.append(f"{sheet.title}:{cut}")
            if lines:
                text = "\n".join(lines)
                units.append(
                    Unit(text=text, sheet=sheet.title, line_cells=tuple(cells))
                )
                chars += len(text)
        title = workbook.properties.title if workbook.properties else None
    finally:
        workbook.close()
    title = " ".join((title or "").split()) or None
    meta = {"truncated": ";".join(truncated)} if truncated else {}
    if not units:
        units.append(Unit(text=""))
    return Extracted(units=tuple(units), title=title, kind="xlsx", meta=meta)


def _read_sheet(
    sheet: ReadOnlyWorksheet, limits: ExtractLimits, char_budget: int
) -> tuple[list[str], list[str], int]:
    """Read one sheet as lines and first-cell references.

    Returns:
        ``(lines, line_cells, cut)`` where ``cut`` is the number of rows read when
        the sheet was cut short by a limit, else 0.
    """
    # Declared dimensions may be wrong or hostile (A1:XFD1048576); without them
    # openpyxl pads each row only up to its own last cell.
    if hasattr(sheet, "reset_dimensions"):
        sheet.reset_dimensions()
    from openpyxl.utils import get_column_letter

    lines: list[str] = []
    refs: list[str] = []
    rows = 0
    visited = 0
    cell_budget = limits.max_sheet_rows * CELLS_PER_ROW_BUDGET
    chars = 0
    # values_only skips building a cell object per value. Without dimensions
    # openpyxl yields exactly one tuple per row number from 1 (an empty one for
    # each missing row) and pads each tuple from column A, so positions give
    # the cell reference.
    for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
        if not row:
            continue  # a gap between stored rows
        if rows >= limits.max_sheet_rows or visited >= cell_budget:
            return lines, refs, rows
        if chars >= char_budget:
            return lines, refs, rows
        rows += 1
        visited += len(row)
        values: list[str] = []
        first = 0
        for column, value in enumerate(row, start=1):
            if value is None:
                continue
            text = _render(value)
            if text:
                values.append(text)
                first = first or column
        if values:
            line = " | ".join(values)
            lines.append(line)
            refs.append(f"{get_column_letter(first)}{number}")
            chars += len(line) + 1
    return lines, refs, 0


def _render(value: object) -> str:
    """A cell value as one line of text (ISO dates, integral floats without .0)."""
    if type(value) is str and value.isprintable() and "  " not in value:
        return value.strip()  # the common case, kept fast
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec=_timespec(value))
    if isinstance(value, dt.time):
        return value.isoformat(timespec=_timespec(value))
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).replace("\x00", "").translate(_LINE_BREAKS)
    return " ".join(text.split())


def _timespec(value: dt.datetime | dt.time) -> str:
    return "seconds" if value.second or value.microsecond else "minutes"
