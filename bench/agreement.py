"""Compare a CPU validation run with a clean simdev run, case for case.

    .nox/torchcts/bin/python bench/agreement.py RESULTS_CPU RESULTS_SIMDEV [--limit N]

Each argument is a results directory (its only run key) or a result artifact. Prints
the statuses of each side, every executed case that did not pass, every case both
executed whose status differs, and what only one side executed (counted by the other
side's reason); the last line is ``agree: yes`` or ``agree: no``. Exit status 0 when
they agree (every executed case passed on both and no status differs), 1 when not,
2 when a result cannot be read. The long runs that feed it: bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# python puts this file's folder first on sys.path, so its siblings import by name
from agreement_compare import Outcome, compare, render
from torchcts_schema import ArtifactError, CaseRecord, load_result


def _why(record: CaseRecord) -> str | None:
    if record.crash is not None:
        return f"crash {record.crash.kind.value}"
    text = record.mismatch or record.exception_message
    return " ".join(text.split()) if text else None


def outcomes(path: Path) -> dict[str, Outcome]:
    """Case id -> outcome of every record the result holds."""
    artifact = load_result(path)
    return {
        r.case_id: Outcome(
            r.status.value,
            r.not_run_reason.value if r.not_run_reason else None,
            _why(r),
        )
        for r in artifact.records
    }


def main(argv: list[str] | None = None) -> int:
    """Load both results, compare, print; the exit status says whether they agree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="the CPU validation results")
    parser.add_argument("other", type=Path, help="the clean simdev results")
    parser.add_argument("--limit", type=int, default=50, help="cases listed per list")
    args = parser.parse_args(argv)
    try:
        sides = outcomes(args.reference), outcomes(args.other)
    except ArtifactError as exc:
        print(f"agreement: {exc}", file=sys.stderr)
        return 2
    names = ("cpu", "simdev")
    agreement = compare(names, *sides)
    print(render(names, agreement, limit=args.limit))
    return 0 if agreement.clean else 1


if __name__ == "__main__":
    sys.exit(main())
