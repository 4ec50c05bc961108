"""``torchcts-isolate``: audit the known-crash ledger, show adaptive decisions.

Exit codes (`EXIT_CODES`): 0 all good, 1 a rule is malformed, duplicated or matches
nothing, 2 bad usage or unreadable input. ``audit --json`` prints the audit as one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ADAPTIVE_SUFFIX,
    ArtifactError,
    KnownCrashError,
    ToolParser,
    add_results_option,
    exit_codes_epilog,
    for_terminal,
    pick_results_dir,
)

from torchcts_isolate import __version__
from torchcts_isolate.adaptive import decide_adaptive, write_adaptive_decisions
from torchcts_isolate.audit import audit, load_case_list
from torchcts_isolate.ledger import load_ledger

PROG = "torchcts-isolate"
EXIT_CODES = {
    0: "all good",
    1: "a known-crash rule is malformed, duplicated or matches nothing",
    2: "bad usage or unreadable input: one line naming the file",
}
DESCRIPTION = (
    "Audit the known-crash ledger (known_segfaults.json) and show the adaptive "
    "isolation decisions a run would take from earlier results."
)


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
    tool = ToolParser(PROG, DESCRIPTION, __version__, exit_codes_epilog(EXIT_CODES))
    parser = tool.parser
    check = tool.add(
        "audit", "validate every known-crash rule and list the cases it matches"
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
    check.add_argument(
        "--backend", metavar="NAME", help="only check rules for this backend"
    )
    check.add_argument(
        "--torch-version",
        metavar="VERSION",
        help="only rules for this torch version, e.g. 2.13.0 (default: any)",
    )
    check.add_argument(
        "--hardware-key",
        metavar="KEY",
        help="only rules for this hardware key (default: any)",
    )
    check.add_argument(
        "--no-packaged", action="store_true", help="leave out the packaged rules"
    )
    check.add_argument(
        "--json",
        action="store_true",
        help="print {rules, cases, matches, not_checked, warnings, errors} as JSON",
    )
    adapt = tool.add(
        "adaptive", "show (and with --write, save) adaptive isolation decisions"
    )
    add_results_option(adapt, legacy="results_dir")
    adapt.add_argument(
        "--run-key", required=True, metavar="KEY", help="the run key to decide for"
    )
    adapt.add_argument(
        "--torch-version",
        metavar="VERSION",
        help="current torch version, e.g. 2.13.0",
    )
    adapt.add_argument(
        "--write",
        action="store_true",
        help=f"write the decision file <key>{ADAPTIVE_SUFFIX} in the results directory",
    )
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
    if args.json:
        # ensure_ascii: escapes from a crafted ledger stay \u escapes
        summary = {
            "rules": len(ledger.rules),
            "cases": len(cases) if cases is not None else None,
            "matches": result.matches,
            "not_checked": result.not_checked,
            "warnings": result.warnings,
            "errors": result.errors,
        }
        print(json.dumps(summary, indent=2, sort_keys=True))
        return 1 if result.errors else 0
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
    results = Path(pick_results_dir(args.results, args.results_dir))
    decisions = decide_adaptive(results, args.run_key, args.torch_version)
    for case_id in sorted(decisions.cases):
        kinds = sorted({e["evidence"] for e in decisions.cases[case_id]})
        _print(f"{case_id}: isolate ({', '.join(kinds)})")
    for skipped in decisions.skipped:
        _print(f"skipped {skipped['source']}: {skipped['why']}")
    if args.write:
        _print(f"wrote {write_adaptive_decisions(results, decisions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
