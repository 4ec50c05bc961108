"""``torchcts-report``: render, diff and merge from the command line.

Exit codes: 0 done; 1 a diff guard tripped; 2 bad input or usage (one line naming the
file, key or value, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts_schema import ArtifactError

from torchcts_report.diff import check_guards, diff_artifacts, render_diff
from torchcts_report.inputs import load_input
from torchcts_report.merge import merge_paths
from torchcts_report.render import render_path

PROG = "torchcts-report"


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except ArtifactError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 2
    return code


def _render(args: argparse.Namespace) -> int:
    paths = render_path(
        Path(args.path),
        run_key=args.run_key,
        out_dir=Path(args.out) if args.out else None,
        junit_all=args.junit_all,
    )
    for path in paths:
        print(path)
    return 0


def _diff(args: argparse.Namespace) -> int:
    old = load_input(Path(args.old), run_key=args.run_key).artifact
    new = load_input(Path(args.new), run_key=args.run_key).artifact
    diff = diff_artifacts(old, new)
    text = render_diff(diff, old, new)
    guards = check_guards(
        diff,
        max_vanished_share=args.max_vanished_share,
        max_regressed_share=args.max_regressed_share,
    )
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for breach in guards.breaches:
        print(f"{PROG}: guard: {breach}", file=sys.stderr)
    return 0 if guards.ok else 1


def _merge(args: argparse.Namespace) -> int:
    target = merge_paths(
        [Path(p) for p in args.shards], Path(args.out), run_key=args.run_key
    )
    print(target)
    return 0


def share(value: str) -> float:
    """A share given as 0.05 or 5%, between 0 and 1."""
    text = value.strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number or percentage"
        ) from None
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not between 0 and 1 (0% and 100%)"
        )
    return number


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    render = sub.add_parser("render", help="write <key>.md, .html and .junit.xml")
    render.add_argument(
        "path",
        nargs="?",
        default="results",
        help="results directory or artifact (default: results)",
    )
    render.add_argument("--run-key", help="which run, when the directory holds several")
    render.add_argument("--out", help="directory for the reports (default: beside it)")
    render.add_argument(
        "--junit-all",
        action="store_true",
        help="list every not_run case in the JUnit XML (by default those left out "
        "by the run's selection or the manifest's dtypes and capabilities are "
        "only counted)",
    )
    render.set_defaults(handler=_render)

    diff = sub.add_parser("diff", help="compare two runs case by case")
    diff.add_argument("old", help="results directory or artifact of the earlier run")
    diff.add_argument("new", help="results directory or artifact of the later run")
    diff.add_argument("--run-key", help="which run, when a directory holds several")
    diff.add_argument(
        "--max-vanished-share",
        type=share,
        metavar="SHARE",
        help="exit 1 when more than this share of old cases vanished",
    )
    diff.add_argument(
        "--max-regressed-share",
        type=share,
        metavar="SHARE",
        help="exit 1 when more than this share of old cases regressed",
    )
    diff.add_argument("--out", help="write the markdown diff here instead of stdout")
    diff.set_defaults(handler=_diff)

    merge = sub.add_parser("merge", help="merge shards into one canonical result")
    merge.add_argument(
        "shards",
        nargs="+",
        metavar="SHARD",
        help="results directory or artifact of each shard",
    )
    merge.add_argument("--out", required=True, help="results directory to write to")
    merge.add_argument("--run-key", help="run key of the merged result")
    merge.set_defaults(handler=_merge)
    return parser
