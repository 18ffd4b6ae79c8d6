"""Run every shared sample file through its extractor and count the outcomes.

Usage: ``python bench/samples_extract.py [SAMPLES_DIR] [--verbose]``

Each file ends as ``ok`` or as the ``reason`` of an ExtractionError; any other
exception is a bug in an extractor and is listed as ``CRASH`` (exit status 1).
Suffixes other than .pdf/.docx/.pptx/.xlsx count as ``unsupported``.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter
from pathlib import Path

from _common import SHARED_DIR

try:
    import docindex.ingest.extract  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docindex.errors import ExtractionError
from docindex.ingest.extract import ExtractLimits, get_extractor

KINDS = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx"}
DEFAULT_SAMPLES = SHARED_DIR / "samples"


def main(argv: list[str]) -> int:
    """Extract every sample, print counts by outcome and timing; 1 on a crash."""
    verbose = "--verbose" in argv
    args = [a for a in argv if a != "--verbose"]
    root = Path(args[0]) if args else DEFAULT_SAMPLES
    if not root.is_dir():
        print(f"no samples at {root}", file=sys.stderr)
        return 2
    files = sorted(p for p in root.rglob("*") if p.is_file())
    limits = ExtractLimits()
    outcomes: Counter[str] = Counter()
    by_kind: Counter[tuple[str, str]] = Counter()
    crashes: list[str] = []
    timings: list[tuple[float, str]] = []
    start = time.perf_counter()
    for path in files:
        kind = KINDS.get(path.suffix.lower())
        if kind is None:
            outcomes["unsupported"] += 1
            continue
        data = path.read_bytes()
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = get_extractor(kind)(data, path.name, limits)
                outcome = "ok"
                detail = f"{len(result.units)} units"
            except ExtractionError as exc:
                outcome, detail = exc.reason, str(exc)
            except Exception as exc:  # an extractor bug: must never happen
                outcome, detail = "CRASH", f"{type(exc).__name__}: {exc}"
                crashes.append(f"{path.relative_to(root)}: {detail}")
        if caught:
            outcomes["leaked-warning"] += 1
            detail += f" [warning escaped: {caught[0].message}]"
        took = time.perf_counter() - t0
        timings.append((took, str(path.relative_to(root))))
        outcomes[outcome] += 1
        by_kind[(kind, outcome)] += 1
        if verbose:
            print(f"{took:7.3f}s {outcome:14} {path.relative_to(root)}  {detail}")
    total = time.perf_counter() - start
    extracted = len(timings)
    print(f"samples: {len(files)} files under {root}")
    for outcome, count in sorted(outcomes.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {outcome:16} {count:4}")
    print("by kind:")
    for (kind, outcome), count in sorted(by_kind.items()):
        print(f"  {kind:5} {outcome:16} {count:4}")
    rate = extracted / total if total else 0.0
    print(f"total {total:.2f} s for {extracted} extracted files ({rate:.1f} files/s)")
    print("slowest:")
    for took, name in sorted(timings, reverse=True)[:3]:
        print(f"  {took:6.2f} s  {name}")
    for line in crashes:
        print(f"CRASH {line}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
