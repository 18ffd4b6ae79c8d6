"""One boundary every extractor's output passes: text that anything downstream can take.

Extractors return what their libraries give them. A PDF whose ToUnicode map
points a glyph at half of a UTF-16 surrogate pair yields ``'\\ud83d'`` (issue
#17), which no UTF-8 encoder, SQLite binding or JSON writer accepts; a text
file may hold NUL or escape bytes. ``clean_extracted`` makes every string of
an ``Extracted`` valid Unicode without C0 controls (tab and newline kept), so
one odd glyph costs one character, never the file or the scan.
"""

from __future__ import annotations

import re
from dataclasses import replace

from docindex.models import Extracted, Unit

# Lone (or paired but split) surrogates, and C0 controls but tab and newline.
_BAD = re.compile("[\x00-\x08\x0b-\x1f\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: surrogate pairs joined, lone ones U+FFFD, controls spaces.

    A control becomes a space rather than nothing so words on either side stay
    apart and the text keeps its length and its lines. Text that needs no
    change is returned as is (one regex search).
    """
    if _BAD.search(text) is None:
        return text
    if any("\ud800" <= c <= "\udfff" for c in text):
        # A UTF-16 round trip joins high+low pairs into their character and
        # replaces the halves left alone with U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _CONTROL.sub(" ", text)


def _clean_opt(text: str | None) -> str | None:
    return None if text is None else clean_text(text)


def clean_extracted(extracted: Extracted) -> Extracted:
    """Every string of ``extracted`` through ``clean_text`` (a copy only if one changed)."""
    units = tuple(_clean_unit(unit) for unit in extracted.units)
    title = _clean_opt(extracted.title)
    meta = {clean_text(k): clean_text(v) for k, v in extracted.meta.items()}
    if (
        title == extracted.title
        and meta == extracted.meta
        and all(a is b for a, b in zip(units, extracted.units, strict=True))
    ):
        return extracted
    return replace(extracted, units=units, title=title, meta=meta)


def _clean_unit(unit: Unit) -> Unit:
    text = clean_text(unit.text)
    sheet = _clean_opt(unit.sheet)
    cells = unit.line_cells
    if cells is not None and any(_BAD.search(c) for c in cells):
        cells = tuple(clean_text(c) for c in cells)
    if text is unit.text and sheet is unit.sheet and cells is unit.line_cells:
        return unit
    return replace(unit, text=text, sheet=sheet, line_cells=cells)
