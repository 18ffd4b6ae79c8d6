"""OCR (issue #36): word accuracy, seconds per page, and the cost of ``--ocr`` when no file needs it.

    python bench/ocr.py [--pages 4] [--runs 5] [--samples ../shared/samples]

1. Accuracy and speed: ``--pages`` clean 300-dpi A4 pages of ~300 English
   words (a fixed seed, DejaVu Sans 11 pt) are OCR'd one at a time through
   docindex's own path (``ocr.read_image``), with ``eng`` alone and with the
   default languages (``eng`` + the installed CJK packs); one Chinese page too
   when ``chi_sim`` is installed. Word accuracy = reference words matched in
   order (difflib) / reference words.
2. Samples: ``--samples`` scanned with OCR off, then on (fresh indexes):
   every file skipped as ``no-text-layer`` without OCR must be read with it
   (indexed, or ``no-text-found`` when OCR finds no words).
3. No file needing OCR: the samples that need no OCR (not skipped as
   ``no-text-layer`` without it, and no PDF page that OCR reads), copied to
   a folder,
   scanned into a fresh index with and without ``--ocr``, interleaved,
   ``--runs`` each, in fresh processes; wall-clock medians.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

WORDS = """the of and to in is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we
their has would when if so no will more can out about up into than them what
some could other time only new these two may first then do any like my now
over such our man me even most made after also did many before must through
back years where much your way well down should because each just those people
how too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us
great old year off come since against go came right used take three invoice
contract payment delivery warehouse schedule meeting budget quarterly report
harbour inspection customer supplier account balance signature approval
""".split()
CHINESE = "这是一份扫描的合同文件付款日期在三月底之前供应商必须交付所有货物并提供发票"


def _page_words(rng: random.Random, n_lines: int = 30, per_line: int = 10) -> list[str]:
    lines = []
    for _ in range(n_lines):
        words = [rng.choice(WORDS) for _ in range(per_line)]
        if rng.random() < 0.3:
            words[rng.randrange(per_line)] = str(rng.randrange(10, 99_999))
        words[0] = words[0].capitalize()
        lines.append(" ".join(words))
    return lines


def _accuracy(reference: list[str], found: list[str]) -> float:
    matcher = difflib.SequenceMatcher(a=reference, b=found, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return matched / max(len(reference), 1)


def _ocr_pages(pages: int, langs: tuple[str, ...]) -> tuple[float, list[float]]:
    import _scans

    from docindex.ingest.extract import ocr

    settings = ocr.OcrSettings(enabled=True, languages=langs)
    rng = random.Random(36)
    seconds, accuracy = [], []
    for _ in range(pages):
        lines = _page_words(rng)
        image = _scans.page(lines, pt=11)
        started = time.perf_counter()
        text = ocr.read_image(image, settings, 300)
        seconds.append(time.perf_counter() - started)
        reference = " ".join(lines).lower().split()
        accuracy.append(_accuracy(reference, text.lower().split()))
    return statistics.mean(accuracy), seconds


def _chinese(langs: tuple[str, ...]) -> tuple[float, float]:
    import _scans

    from docindex.ingest.extract import ocr

    lines = [CHINESE[i : i + 13] for i in range(0, len(CHINESE), 13)] * 6
    image = _scans.page(lines, pt=14, cjk=True)
    started = time.perf_counter()
    text = ocr.read_image(image, ocr.OcrSettings(enabled=True, languages=langs), 300)
    took = time.perf_counter() - started
    reference = list("".join(lines))
    found = [c for c in text if not c.isspace()]
    return _accuracy(reference, found), took


def _scan(folder: Path, db: Path, ocr: bool) -> tuple[float, dict[str, object]]:
    cmd = [sys.executable, "-m", "docindex", "scan", str(folder), "--db", str(db),
           "--json", *(["--ocr"] if ocr else [])]  # fmt: skip
    # A cache of its own: OCR text kept by an earlier run must not be reused.
    env = {**os.environ, "XDG_CACHE_HOME": str(db.parent / "cache")}
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started, json.loads(out.stdout)


def _skipped(db: Path, reason: str) -> list[str]:
    cmd = [sys.executable, "-m", "docindex", "skipped", "--db", str(db), "--json",
           "--reason", reason]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    return sorted(str(Path(item["path"]).resolve()) for item in data["files"])


def _ocr_touched(samples: Path) -> set[str]:
    """PDFs with a page that goes to OCR (text-poor, with an image)."""
    from docindex.errors import ExtractionError
    from docindex.ingest.extract import ExtractLimits, pdf
    from docindex.ingest.extract.ocr import OcrSettings

    calls = []
    real = pdf.read_image

    def counted(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        return real(*args, **kwargs)

    pdf.read_image = counted  # a bench's probe: which files OCR reads
    limits = ExtractLimits(ocr=OcrSettings(enabled=True, page_timeout_s=300))
    out = set()
    try:
        for path in samples.rglob("*.pdf"):
            calls.clear()
            try:
                pdf.extract(path.read_bytes(), path.name, limits)
            except ExtractionError:
                pass
            if calls:
                out.add(str(path.resolve()))
    finally:
        pdf.read_image = real
    return out


def main() -> None:
    from docindex.ingest.extract import ocr

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument(
        "--folder", type=Path, help="only step 3, on this folder (it must need no OCR)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--samples", type=Path, default=HERE.parent.parent / "shared" / "samples"
    )
    args = parser.parse_args()
    engine = ocr.engine()
    if engine is None:
        sys.exit("tesseract is not installed")
    default = ocr.languages(ocr.OcrSettings(enabled=True), engine)
    print(f"engine: {engine.version}; installed: {', '.join(engine.installed)}")

    print("\n1. clean 300-dpi A4 pages, ~300 words each")
    for langs in dict.fromkeys([("eng",), default]):
        acc, secs = _ocr_pages(args.pages, langs)
        print(f"  {'+'.join(langs)}: word accuracy {acc:.1%}; seconds per page "
              f"{', '.join(f'{s:.2f}' for s in secs)} (median "
              f"{statistics.median(secs):.2f})")  # fmt: skip
    if "chi_sim" in default:
        acc, took = _chinese(default)
        print(f"  Chinese page, {'+'.join(default)}: character accuracy {acc:.1%}, "
              f"{took:.2f} s")  # fmt: skip

    if args.folder is not None:
        with tempfile.TemporaryDirectory() as tmp:
            _side_by_side(args.folder, Path(tmp), args.runs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"\n2. {args.samples}: OCR off, then on")
        _, off = _scan(args.samples, base / "off.db", False)
        needs = _skipped(base / "off.db", "no-text-layer")
        wall, on = _scan(args.samples, base / "on.db", True)
        still = set(_skipped(base / "on.db", "no-text-layer")) & set(needs)
        empty = set(_skipped(base / "on.db", "no-text-found")) & set(needs)
        print(f"  no-text-layer without OCR: {len(needs)} files; with OCR still "
              f"unread: {len(still)}; read, no words found: {len(empty)}; indexed: "
              f"{len(needs) - len(still) - len(empty)}; scan with OCR {wall:.1f} s")  # fmt: skip

        touched = _ocr_touched(args.samples)
        print(f"\n3. the samples that need no OCR (all but {len(set(needs) | touched)}),"
              " scanned with and without --ocr")  # fmt: skip
        folder = base / "plain"
        for path in args.samples.rglob("*"):
            if path.is_file() and str(path.resolve()) not in set(needs) | touched:
                target = folder / path.relative_to(args.samples)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        _side_by_side(folder, base, args.runs)


def _side_by_side(folder: Path, base: Path, runs: int) -> None:
    """Scan ``folder`` into fresh indexes with and without --ocr, interleaved."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for run in range(runs):
        for flag in (False, True) if run % 2 == 0 else (True, False):
            db = base / f"r{run}{flag}.db"
            wall, data = _scan(folder, db, flag)
            times[flag].append(wall)
            print(f"  run {run + 1} {'--ocr' if flag else 'no ocr'}: {wall:.2f} s "
                  f"(indexed {data['indexed']}, skipped {data['skipped']})")  # fmt: skip
    off_m, on_m = statistics.median(times[False]), statistics.median(times[True])
    print(
        f"  median: without OCR {off_m:.2f} s, with --ocr {on_m:.2f} s "
        f"({(on_m / off_m - 1):+.1%}), {runs} runs each, interleaved"
    )


if __name__ == "__main__":
    main()
