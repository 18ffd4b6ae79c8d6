"""SIGKILL real ``docindex scan`` processes at random moments, many times.

The same loop as tests/test_reliability.py (``crash_loop``): the tree flips
between two variants before each scan, the scan is killed after a random
delay within its usual run time, and the index must then open, pass
``PRAGMA integrity_check`` and the FTS5 integrity check, hold no half-indexed
document, and equal either the previous commit or a fresh scan; every few
rounds a scan runs to completion and must equal a fresh scan.

    python bench/crash_kill.py --kills 100 --files 60 --seed 1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_reliability import crash_loop  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--files", type=int, default=60,
                        help="files per tree (>= 48 changed files use the worker pool)")  # fmt: skip
    parser.add_argument("--complete-every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docindex-crash-") as tmp:
        stats = crash_loop(Path(tmp), kills=args.kills, n_files=args.files,
                           complete_every=args.complete_every, seed=args.seed)  # fmt: skip
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
