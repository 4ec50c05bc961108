"""``torchcts-report``: render, diff, explain, merge and export-skips from the command
line.

Every command that reads a results directory takes it as ``--results DIR``; the older
positional spellings still work. Exit codes: 0 done; 1 a diff guard tripped; 2 bad
input or usage (one line naming the file, key or value, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torchcts_schema import (
    REPORT_SUFFIXES,
    ArtifactError,
    ToolParser,
    for_terminal,
    live_holder,
    pick_results_dir,
    write_atomic,
)

from torchcts_report import __version__
from torchcts_report.diff import check_guards, diff_artifacts, diff_json, render_diff
from torchcts_report.explain import explain_case, explanation_json, render_explanation
from torchcts_report.export_skips import FORMATS, export_skips
from torchcts_report.inputs import load_input, results_dir_of
from torchcts_report.merge import merge_paths
from torchcts_report.render import render_path

PROG = "torchcts-report"
EXIT_CODES = """exit codes:
  0  done
  1  a diff guard tripped (diff --max-vanished-share / --max-regressed-share)
  2  bad input or usage: one line naming the file, key or value"""


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except ArtifactError as exc:
        _error(str(exc))
        return 2
    except OSError as exc:
        _error(f"{exc.filename or ''}: {exc.strerror}")
        return 2
    return code


def _error(text: str) -> None:
    # artifact text (case ids, run keys) may hold escapes meant for the terminal
    print(f"{PROG}: error: {for_terminal(text, keep_newlines=False)}", file=sys.stderr)


def _say(text: str) -> None:
    print(for_terminal(text))


def _render(args: argparse.Namespace) -> int:
    path = pick_results_dir(args.results, args.path, "results")
    _note_live_run(Path(path))
    paths = render_path(
        Path(path),
        run_key=args.run_key,
        out_dir=Path(args.out) if args.out else None,
        junit_all=args.junit_all,
    )
    if args.json:
        _say(json.dumps({"reports": [str(p) for p in paths]}, indent=2))
    else:
        for report in paths:
            _say(str(report))
    return 0


def _note_live_run(path: Path) -> None:
    """One line on stderr when a run still writes the directory: its report is of a
    recovery snapshot, legitimate to look at but not the run's result."""
    folder = results_dir_of(path)
    holder = live_holder(folder)
    if holder is not None:
        print(
            f"{PROG}: note: a TorchCTS run is still writing "
            f"{for_terminal(str(folder), keep_newlines=False)} "
            f"({for_terminal(holder, keep_newlines=False)}); this report is of its "
            "partial result so far",
            file=sys.stderr,
        )


def _diff(args: argparse.Namespace) -> int:
    old_path = pick_results_dir(args.old_results, args.old, "")
    new_path = pick_results_dir(args.new_results, args.new, "")
    if not old_path or not new_path:
        raise ArtifactError(None, "diff needs the old and the new results (OLD NEW)")
    old = load_input(Path(old_path), run_key=args.run_key).artifact
    new = load_input(Path(new_path), run_key=args.run_key).artifact
    diff = diff_artifacts(old, new)
    guards = check_guards(
        diff,
        max_vanished_share=args.max_vanished_share,
        max_regressed_share=args.max_regressed_share,
    )
    if args.json:
        text = json.dumps(diff_json(diff, guards), indent=2, sort_keys=True) + "\n"
    else:
        text = render_diff(diff, old, new)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(for_terminal(text))
    for breach in guards.breaches:
        print(f"{PROG}: guard: {for_terminal(breach)}", file=sys.stderr)
    return 0 if guards.ok else 1


def _explain(args: argparse.Namespace) -> int:
    explanation = explain_case(Path(args.results), args.case, run_key=args.run_key)
    if args.json:
        _say(json.dumps(explanation_json(explanation), indent=2, sort_keys=True))
    else:
        sys.stdout.write(for_terminal(render_explanation(explanation)))
    return 0


def _merge(args: argparse.Namespace) -> int:
    target = merge_paths(
        [Path(p) for p in args.shards], Path(args.out), run_key=args.run_key
    )
    _say(str(target))
    return 0


def _export_skips(args: argparse.Namespace) -> int:
    path = Path(pick_results_dir(args.results, None))  # the schema's default
    artifact = load_input(path, run_key=args.run_key).artifact
    text = export_skips(artifact, args.format, include_not_run=args.include_not_run)
    if args.out:
        write_atomic(Path(args.out), text)
    else:
        sys.stdout.write(for_terminal(text))
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
    tool = ToolParser(
        PROG,
        "Reports from TorchCTS result artifacts: render, diff, explain, merge, "
        "export-skips.",
        __version__,
        EXIT_CODES,
    )
    parser = tool.parser

    md, html, junit = REPORT_SUFFIXES
    render = tool.add("render", f"write <key>{md}, {html} and {junit}")
    render.add_argument(
        "--results",
        metavar="DIR",
        help="results directory or artifact file (default: results)",
    )
    # the older spelling, kept so existing commands (the runner's among them) work
    render.add_argument("path", nargs="?", help=argparse.SUPPRESS)
    render.add_argument("--run-key", help="which run, when the directory holds several")
    render.add_argument(
        "--out", metavar="DIR", help="directory for the reports (default: beside it)"
    )
    render.add_argument(
        "--junit-all",
        action="store_true",
        help="list every not_run case in the JUnit XML (by default the "
        "configuration-level reasons are only counted in suite properties)",
    )
    render.add_argument(
        "--json", action="store_true", help="print the written paths as JSON"
    )
    render.set_defaults(handler=_render)

    diff = tool.add("diff", "compare two runs case by case")
    diff.add_argument("old", nargs="?", help="results directory or artifact, earlier")
    diff.add_argument("new", nargs="?", help="results directory or artifact, later")
    diff.add_argument(
        "--old-results", metavar="DIR", help="the earlier run (instead of OLD)"
    )
    diff.add_argument(
        "--new-results", metavar="DIR", help="the later run (instead of NEW)"
    )
    diff.add_argument("--run-key", help="which run, when a directory holds several")
    diff.add_argument(
        "--max-vanished-share",
        type=share,
        metavar="SHARE",
        help="exit 1 when more than this share (0.05 or 5%%) of the old run's "
        "executed cases (not not_run) vanished or stopped running",
    )
    diff.add_argument(
        "--max-regressed-share",
        type=share,
        metavar="SHARE",
        help="exit 1 when more than this share (0.05 or 5%%) of the old run's "
        "executed cases (not not_run) regressed",
    )
    diff.add_argument(
        "--json",
        action="store_true",
        help="write the result as JSON (counts, guards, every case) instead of "
        "markdown",
    )
    diff.add_argument(
        "--out", metavar="FILE", help="write the diff here instead of stdout"
    )
    diff.set_defaults(handler=_diff)

    explain = tool.add(
        "explain",
        "one case's inputs, expected against got, tolerance, history and repro",
    )
    explain.add_argument("case", metavar="CASE", help="a case id or a node id")
    explain.add_argument(
        "--results",
        metavar="DIR",
        default="results",
        help="results directory, its selections/ included (default: results)",
    )
    explain.add_argument(
        "--run-key",
        help="which run, when several recorded the case (default: the latest)",
    )
    explain.add_argument(
        "--json", action="store_true", help="print the record and history as JSON"
    )
    explain.set_defaults(handler=_explain)

    merge = tool.add("merge", "merge shards into one canonical result")
    merge.add_argument(
        "shards",
        nargs="+",
        metavar="SHARD",
        help="results directory or artifact of each shard",
    )
    merge.add_argument(
        "--out",
        "--results",
        dest="out",
        metavar="DIR",
        required=True,
        help="results directory to write the merged result to",
    )
    merge.add_argument("--run-key", help="run key of the merged result")
    merge.set_defaults(handler=_merge)
    _add_export_skips(tool)
    return parser


def _add_export_skips(tool: ToolParser) -> None:
    export = tool.add(
        "export-skips",
        "non-passed cases as an upstream skip list, each with status and reason",
    )
    export.add_argument(
        "--results",
        metavar="DIR",
        help="results directory or artifact file (default: results)",
    )
    export.add_argument("--run-key", help="which run, when the directory holds several")
    export.add_argument(
        "--format",
        required=True,
        choices=sorted(FORMATS),
        help="opinfo: op_overrides, a dict of DecorateInfo lists by OpInfo name; "
        "xpu-ops: skip_dict, test names by test file as torch-xpu-ops keeps them; "
        "json: one object per op, variant, dtype and status",
    )
    export.add_argument(
        "--include-not-run",
        action="store_true",
        help="also export not_run cases the manifest declined (dtype, capability, "
        "excluded op, known crash, device count) as skips; never the run's own "
        "filters, level or sample limit",
    )
    export.add_argument(
        "--out", metavar="FILE", help="write the list here instead of stdout"
    )
    export.set_defaults(handler=_export_skips)
