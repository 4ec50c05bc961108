"""``torchcts-isolate``: audit the known-crash ledger, show adaptive decisions.

Exit codes: 0 all good, 1 a rule is malformed, duplicated or matches nothing,
2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from torchcts_schema import ArtifactError, KnownCrashError, for_terminal

from torchcts_isolate.adaptive import decide_adaptive, write_adaptive_decisions
from torchcts_isolate.audit import audit, load_case_list
from torchcts_isolate.ledger import load_ledger


def _print(*parts: object, **kwargs: Any) -> None:
    """print, with artifact text made safe for a terminal (escape codes, surrogates)."""
    print(*(for_terminal(str(p)) for p in parts), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``torchcts-isolate`` command."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "audit":
            return _audit(args)
        return _adaptive(args)
    except KnownCrashError as exc:
        _print(f"error: {exc.where}:", file=sys.stderr)
        for problem in exc.problems:
            _print(f"  {problem}", file=sys.stderr)
        return 1
    except ArtifactError as exc:
        _print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchcts-isolate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser(
        "audit", help="validate every known-crash rule and list the cases it matches"
    )
    check.add_argument(
        "--ledger",
        type=Path,
        help="project ledger (default: ./known_segfaults.json when present)",
    )
    check.add_argument(
        "--cases",
        type=Path,
        help="file listing the known case ids (text, JSON or JSON lines; see README)",
    )
    check.add_argument("--backend", help="only check rules for this backend")
    check.add_argument("--torch-version", help="e.g. 2.13.0 (default: any)")
    check.add_argument("--hardware-key", help="default: any")
    check.add_argument(
        "--no-packaged", action="store_true", help="leave out the packaged rules"
    )
    adapt = sub.add_parser(
        "adaptive", help="show (and with --write, save) adaptive isolation decisions"
    )
    adapt.add_argument("results", type=Path, help="results directory")
    adapt.add_argument("--run-key", required=True)
    adapt.add_argument("--torch-version", help="current torch version, e.g. 2.13.0")
    adapt.add_argument("--write", action="store_true", help="write the decision file")
    return parser


def _audit(args: argparse.Namespace) -> int:
    if args.ledger is not None and not args.ledger.is_file():
        raise ArtifactError(args.ledger, "no such ledger file")
    ledger = load_ledger(args.ledger, include_packaged=not args.no_packaged)
    cases = load_case_list(args.cases) if args.cases else None
    result = audit(
        ledger,
        cases,
        backend=args.backend,
        torch_version=args.torch_version,
        hardware_key=args.hardware_key,
    )
    count = f"{len(cases)} cases" if cases is not None else "no case list"
    _print(f"{len(ledger.rules)} rules checked against {count}")
    for label, found in result.matches.items():
        _print(f"{label}: matches {len(found)} case(s)")
        for case_id in found:
            _print(f"  {case_id}")
    for label, why in result.not_checked.items():
        _print(f"{label}: valid; matches not checked ({why})")
    for warning in result.warnings:
        _print(f"warning: {warning}")
    for error in result.errors:
        _print(f"error: {error}", file=sys.stderr)
    return 1 if result.errors else 0


def _adaptive(args: argparse.Namespace) -> int:
    decisions = decide_adaptive(args.results, args.run_key, args.torch_version)
    for case_id in sorted(decisions.cases):
        kinds = sorted({e["evidence"] for e in decisions.cases[case_id]})
        _print(f"{case_id}: isolate ({', '.join(kinds)})")
    for skipped in decisions.skipped:
        _print(f"skipped {skipped['source']}: {skipped['why']}")
    if args.write:
        _print(f"wrote {write_adaptive_decisions(args.results, decisions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
