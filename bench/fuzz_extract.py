"""Fuzz the PDF and OOXML extractors on mutated copies of ../shared/samples.

Each iteration picks a sample (round-robin over PDF/DOCX/PPTX/XLSX), applies one
random mutation (byte flips, truncation, insertions, or an edit inside one XML
part of a ZIP, re-zipped so CRCs stay valid) and extracts it with a wall-clock
limit (the indexer's 30 s by default, which a scan turns into the skip reason
``timeout``). Allowed outcomes: text, an ExtractionError with a known reason,
or that timeout. Any other exception is a failure; its input is saved.

    python bench/fuzz_extract.py --iterations 2000 --seed 1 [--save DIR]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_fuzz import Hang, extract_bounded, mutate, samples  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per extraction (the indexer's default)")  # fmt: skip
    parser.add_argument("--max-bytes", type=int, default=2_000_000,
                        help="largest sample to mutate")  # fmt: skip
    parser.add_argument("--save", type=Path, default=Path("/tmp/docindex-fuzz-failures"),
                        help="where failing inputs are written")  # fmt: skip
    args = parser.parse_args()
    found = samples(args.max_bytes)
    by_kind: dict[str, list[Path]] = {}
    for path in found:
        by_kind.setdefault(path.suffix.lower(), []).append(path)
    kinds = sorted(by_kind)
    rng = random.Random(args.seed)
    outcomes: dict[str, dict[str, int]] = {k: {} for k in kinds}
    times: list[float] = []
    failures = 0
    started = time.perf_counter()
    for i in range(args.iterations):
        suffix = kinds[i % len(kinds)]
        path = rng.choice(by_kind[suffix])
        data = mutate(path.read_bytes(), rng)
        t0 = time.perf_counter()
        try:
            got = extract_bounded(data, path.name, args.timeout)
        except Hang:
            # What the indexer does too: skipped with reason "timeout". Bounded,
            # but worth a look if it recurs on small inputs.
            got = "timeout"
            print(f"[{i}] {path.name}: over {args.timeout:g} s", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - every escape is a finding
            failures += 1
            got = f"FAIL {type(exc).__name__}"
            args.save.mkdir(parents=True, exist_ok=True)
            out = args.save / f"{i:05d}-{path.name}"
            out.write_bytes(data)
            print(f"[{i}] {path.name}: {type(exc).__name__}: {exc} -> {out}",
                  file=sys.stderr)  # fmt: skip
            traceback.print_exc(limit=3)
        times.append(time.perf_counter() - t0)
        outcomes[suffix][got] = outcomes[suffix].get(got, 0) + 1
    took = time.perf_counter() - started
    print(f"{args.iterations} mutations of {len(found)} samples in {took:.1f} s "
          f"(seed {args.seed}); failures: {failures}")  # fmt: skip
    print(
        f"per extraction: median {statistics.median(times) * 1000:.1f} ms, "
        f"max {max(times):.2f} s; peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    for kind in kinds:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes[kind].items()))
        print(f"  {kind:6} {parts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
