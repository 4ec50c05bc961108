"""Verify the committed backend evidence store (run by ``bin/nox -s lint``).

Checks ``evidence/backends/`` (or the directory given): every entry against the schema,
no paths or host identity in any line, file names matching backends, and the index
consistent with the files. Exit status 1 lists every problem with file and line.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    from torchcts_evidence import check_store
except ImportError:  # a checkout without the editable install still gets checked
    sys.path[:0] = [
        str(ROOT / "packages" / "torchcts-evidence" / "src"),
        str(ROOT / "packages" / "torchcts-schema" / "src"),
    ]
    from torchcts_evidence import check_store


def main(argv: list[str]) -> int:
    """Check the store; print each problem; 0 when clean."""
    store = Path(argv[0]) if argv else ROOT / "evidence" / "backends"
    problems = check_store(store)
    for problem in problems:
        print(problem)
    entries = sum(1 for p in store.glob("*.jsonl") for _ in p.open(encoding="utf-8"))
    print(f"evidence store: {len(problems)} problem(s) in {entries} entries")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
