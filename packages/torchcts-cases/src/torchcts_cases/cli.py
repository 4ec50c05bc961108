"""``torchcts-cases``: list cases, write and check manifests, count skips, audit coverage.

Bad input (a manifest, a filter) prints one line naming the file, key or value and
exits 2; nothing here executes a case except ``coverage audit`` (CPU only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from torchcts_schema import (
    COVERAGE_DIR,
    ArtifactError,
    ManifestError,
    for_terminal,
    load_manifest,
)

USAGE_ERROR = 2


def _print(*parts: object, **kwargs: Any) -> None:
    """print, with artifact text made safe for a terminal (escape codes, surrogates)."""
    print(*(for_terminal(str(p)) for p in parts), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except (ManifestError, ArtifactError, ValueError, KeyError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        _print(f"torchcts-cases: error: {text}", file=sys.stderr)
        return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchcts-cases", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="write a manifest.py from a template")
    p.add_argument("--template", required=True, choices=_template_names())
    p.add_argument("--device", default="cuda", help="device type (default: cuda)")
    p.add_argument("--backend-import", default=None, help="module that registers it")
    p.add_argument("--output", "-o", default="manifest.py", type=Path)
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_init)

    p = sub.add_parser(
        "check-manifest", help="validate a manifest (schema and op names)"
    )
    p.add_argument("file", type=Path)
    p.set_defaults(func=_check)

    for name, func, text in (
        ("show-skips", _show_skips, "count not_run cases by reason (runs nothing)"),
        ("list", _list, "print the runnable case ids"),
    ):
        p = sub.add_parser(name, help=text)
        _selection_args(p)
        p.set_defaults(func=func)
        if name == "list":
            p.add_argument("--json", action="store_true", help="one CaseSpec per line")

    p = sub.add_parser("coverage", help="aten overload coverage audit")
    p.add_argument("action", choices=("audit", "report", "check"))
    p.add_argument("--results", default=Path("results"), type=Path)
    p.add_argument("--fail-on-unknown", action="store_true")
    p.set_defaults(func=_coverage)
    return parser


def _template_names() -> list[str]:
    from torchcts_cases.templates import TEMPLATES

    return list(TEMPLATES)


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--level", type=int, default=None)
    p.add_argument("--dtype", action="append", default=[], help="repeatable")
    p.add_argument("--suite", action="append", default=[], help="repeatable")
    p.add_argument("--op", action="append", default=[], help="op glob, repeatable")


def _select(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from torchcts_cases import Selection, select_cases

    manifest = load_manifest(args.manifest)
    selection = Selection(
        level=args.level,
        dtypes=tuple(args.dtype),
        suites=tuple(args.suite),
        op_globs=tuple(args.op),
    )
    return manifest, select_cases(manifest, selection)


def _init(args: argparse.Namespace) -> int:
    from torchcts_cases.templates import render

    if args.output.exists() and not args.force:
        raise ValueError(f"{args.output}: exists (use --force to overwrite)")
    text = render(args.template, args.device, args.backend_import)
    load_manifest_text_check(text, args.output)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    _print(f"wrote {args.output} ({args.template} template, device {args.device!r})")
    _print(f"next: edit it, then `torchcts-cases check-manifest {args.output}`")
    return 0


def load_manifest_text_check(text: str, where: Path) -> None:
    """A template must itself be a valid manifest (guards the templates)."""
    from torchcts_schema import read_manifest_source, validate_manifest

    validate_manifest(read_manifest_source(text, where), where, "template")


def _check(args: argparse.Namespace) -> int:
    from torchcts_cases.manifest_check import check_manifest

    manifest, warnings = check_manifest(args.file)
    for warning in warnings:
        _print(f"warning: {args.file}: {warning}")
    _print(
        f"{args.file}: ok (device {manifest.device!r}, {len(manifest.dtypes)} dtypes, "
        f"{len(manifest.capabilities)} capabilities, level {manifest.level})"
    )
    return 0


def _show_skips(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    manifest, selected = _select(args)
    reasons = Counter(
        r.not_run_reason.value for r in selected.not_run if r.not_run_reason
    )
    level = args.level or manifest.level
    _print(f"manifest {args.manifest} (device {manifest.device!r}, level {level})")
    _print(f"  runnable   {len(selected.runnable):>8}")
    _print(f"  not_run    {len(selected.not_run):>8}")
    for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        _print(f"    {reason:<28}{count:>8}")
    _print(f"({time.perf_counter() - start:.1f}s, nothing executed)")
    return 0


def _list(args: argparse.Namespace) -> int:
    _manifest, selected = _select(args)
    out = sys.stdout
    for spec in selected.runnable:
        out.write((json.dumps(spec.to_dict()) if args.json else spec.case_id) + "\n")
    return 0


def _coverage(args: argparse.Namespace) -> int:
    from torchcts_cases import coverage

    summary_path = args.results / COVERAGE_DIR / "summary.json"
    if args.action == "report":
        if not summary_path.exists():
            raise ValueError(f"{summary_path}: no audit yet (run `coverage audit`)")
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{summary_path}: not valid JSON ({exc})") from None
        _print(coverage.summary_markdown(summary), end="")
        return 0
    rows = coverage.audit()
    out = coverage.write_coverage(args.results, rows)
    summary = coverage.summarize(rows)
    _print(coverage.summary_markdown(summary), end="")
    _print(f"wrote {out}/")
    unknown = int(summary["counts"][coverage.UNKNOWN])
    if args.action == "check" and args.fail_on_unknown and unknown:
        _print(f"{unknown} overloads are unknown (see {out}/pending_review.json)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
