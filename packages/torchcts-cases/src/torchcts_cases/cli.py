"""``torchcts-cases``: list cases, write and check manifests, count skips, audit coverage.

Bad input (a manifest, a filter) prints one line naming the file, key or value and
exits 2; nothing here executes a case itself except ``coverage audit`` (CPU only).
``init-manifest`` writes a manifest a run accepts (the device and backend import are
the user's); ``init`` writes a template still marked ``TEMPLATE = True``. ``discover``
runs cases only through ``torchcts-run`` (a child process, with the runner's crash
isolation and limits) and proposes DTYPES and OPS from what they did.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from torchcts_schema import (
    COVERAGE_DIR,
    ArtifactError,
    ManifestError,
    NotRunReason,
    ToolParser,
    exit_codes_epilog,
    for_terminal,
    load_manifest,
    tool_command,
    tool_prefix_at,
    write_atomic,
)

from torchcts_cases import __version__, discover_command
from torchcts_cases.spec import CaseSpec

PROG = "torchcts-cases"
USAGE_ERROR = 2
PROBE_INCOMPLETE = 3
NO_CASES = 5  # pytest's "no tests collected": a selection with nothing in it
EXIT_CODES = {
    0: "done (check-manifest: the manifest is valid)",
    1: "coverage check --fail-on-unknown: some overloads are still unknown",
    2: "bad input or usage: one line naming the file, key or value",
    3: "discover: the probe run did not complete (interrupted, backend unusable, "
    "nothing selected): one line saying what to do",
    5: "list, show-skips: an --op, --dtype or --suite matches no case of the "
    "manifest: one line naming it",
}
DESCRIPTION = (
    "List TorchCTS cases, write and check manifests, count what will not run, "
    "discover dtype support, and audit aten coverage. Nothing here executes a case "
    "itself except coverage audit (on the CPU); discover runs its probe through "
    "torchcts-run."
)


def _print(*parts: object, **kwargs: Any) -> None:
    """print, with artifact text made safe for a terminal (escape codes, surrogates)."""
    print(*(for_terminal(str(p)) for p in parts), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    from torchcts_cases.discovery_probe import ProbeError

    try:
        code: int = args.func(args)
        return code
    except BrokenPipeError:
        # the reader left (`list ... | head`): what it wanted was written; keep
        # Python's exit-time flush from failing on the closed pipe too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except ProbeError as exc:
        _print(f"torchcts-cases: error: {exc}", file=sys.stderr)
        return PROBE_INCOMPLETE
    except NothingSelected as exc:
        _print(f"torchcts-cases: {exc}", file=sys.stderr)
        return NO_CASES
    except (ManifestError, ArtifactError, ValueError, KeyError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        _print(f"torchcts-cases: error: {text}", file=sys.stderr)
        return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    tool = ToolParser(PROG, DESCRIPTION, __version__, exit_codes_epilog(EXIT_CODES))
    parser = tool.parser

    p = tool.add(
        "init-manifest",
        "write a commented manifest for your backend that a run accepts as it is",
    )
    _init_args(p, device_required=True, template_default="minimal")
    p.add_argument(
        "--backend-name",
        default=None,
        help="the backend's name in reports (default: a placeholder that a "
        "submission archive refuses until you change it)",
    )
    p.set_defaults(func=_init, marked=False)

    p = tool.add("init", "write a manifest template, marked TEMPLATE = True")
    _init_args(p, device_required=False, template_default=None)
    p.set_defaults(func=_init, marked=True, backend_name=None)

    p = tool.add("check-manifest", "validate a manifest (schema and op names)")
    p.add_argument("file", type=Path, metavar="FILE", help="the manifest to check")
    p.set_defaults(func=_check)

    p = tool.add("show-skips", "count not_run cases by reason (runs nothing)")
    _selection_args(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print {manifest, device, level, runnable, not_run, not_run_by_reason} "
        "as JSON",
    )
    p.set_defaults(func=_show_skips)

    p = tool.add("list", "print the runnable case ids")
    _selection_args(p)
    p.add_argument(
        "--json", action="store_true", help="one CaseSpec JSON object per line"
    )
    p.add_argument(
        "--not-run",
        metavar="REASON",
        choices=[r.value for r in NotRunReason],
        help="print the ids of the cases not run for REASON instead (a run counts "
        "level_filtered and filtered_by_selection cases without recording them: "
        "this lists them from the index, e.g. --not-run level_filtered)",
    )
    p.set_defaults(func=_list)

    p = tool.add(
        "discover",
        "probe every op x dtype (forward, backward) on the device through "
        "torchcts-run and propose DTYPES and OPS",
    )
    discover_command.add_arguments(p)
    p.set_defaults(func=functools.partial(discover_command.run, say=_print))

    p = tool.add("coverage", "aten overload coverage audit")
    p.add_argument(
        "action",
        choices=("audit", "report", "check"),
        help="audit: trace and write DIR/coverage/; report: print the last audit; "
        "check: audit, then exit 1 with --fail-on-unknown while unknowns remain",
    )
    p.add_argument(
        "--results",
        default=Path("results"),
        type=Path,
        metavar="DIR",
        help="results directory holding coverage/ (default: results)",
    )
    p.add_argument(
        "--fail-on-unknown",
        action="store_true",
        help="with check: exit 1 while some overload is unknown",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the summary (torch version, overloads, counts per category, "
        "excluded by reason) as JSON instead of a table",
    )
    p.set_defaults(func=_coverage)

    p = tool.add(
        "overloads",
        "count the generated per-overload cases (suite aten) and list every "
        "overload without one, with its reason",
    )
    p.add_argument(
        "--not-generated",
        action="store_true",
        help="also list each overload and variant without a case, one per line",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_overloads)
    return parser


def _init_args(
    p: argparse.ArgumentParser, *, device_required: bool, template_default: str | None
) -> None:
    p.add_argument(
        "--template",
        required=template_default is None,
        default=template_default,
        choices=_template_names(),
        help="how deep the manifest starts"
        + (f" (default: {template_default})" if template_default else ""),
    )
    p.add_argument(
        "--device",
        required=device_required,
        default=None if device_required else "cuda",
        help="device type the backend registers, e.g. cuda, mps or your "
        "PrivateUse1 name" + ("" if device_required else " (default: cuda)"),
    )
    p.add_argument(
        "--backend-import",
        default=None,
        metavar="MODULE",
        help="module imported before the run that registers the backend "
        "(default: none, for built-in devices)",
    )
    p.add_argument(
        "--output",
        "-o",
        default="manifest.py",
        type=Path,
        metavar="FILE",
        help="where to write it (default: manifest.py); an existing file is refused",
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite an existing file after all"
    )


def _template_names() -> list[str]:
    from torchcts_cases.templates import TEMPLATES

    return list(TEMPLATES)


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--manifest", required=True, type=Path, metavar="FILE", help="the manifest"
    )
    p.add_argument(
        "--level",
        type=int,
        default=None,
        metavar="N",
        help="semantic level 1-8 (default: the manifest's)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=[],
        metavar="NAME",
        help="only this dtype (repeatable)",
    )
    p.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="NAME",
        help="only this suite (repeatable)",
    )
    p.add_argument(
        "--op",
        action="append",
        default=[],
        metavar="GLOB",
        help="only ops matching this glob (repeatable)",
    )


class NothingSelected(Exception):
    """A filter of the selection options matches no case of the manifest."""


def _select(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The manifest and its selection, for every subcommand that takes the
    selection options; a filter that matches no case raises `NothingSelected`
    (an empty listing would look like a manifest that runs nothing)."""
    from torchcts_schema import unmatched_filter

    from torchcts_cases import Selection, select_cases

    manifest = load_manifest(args.manifest)
    selection = Selection(
        level=args.level,
        dtypes=tuple(args.dtype),
        suites=tuple(args.suite),
        op_globs=tuple(args.op),
    )
    selected = select_cases(manifest, selection)
    problem = unmatched_filter(selected, args.op, args.dtype, args.suite)
    if problem is not None:
        raise NothingSelected(f"{args.manifest}: {problem}")
    return manifest, selected


def _init(args: argparse.Namespace) -> int:
    from torchcts_cases.templates import render

    if args.output.exists() and not args.force:
        raise ValueError(f"{args.output}: exists (use --force to overwrite)")
    text = render(
        args.template,
        args.device,
        args.backend_import,
        marked=args.marked,
        backend_name=args.backend_name,
        cases_command=tool_command(PROG, tool_prefix_at()),
    )
    load_manifest_text_check(text, args.output)
    write_atomic(args.output, text)
    _print(f"wrote {args.output} ({args.template} template, device {args.device!r})")
    check = _command("check-manifest", str(args.output))
    if args.marked:
        _print(f"next: edit it, then `{check}`")
    else:
        _print(f"next: `{check}`, then run it")
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
    if args.json:
        _print(
            json.dumps(
                {
                    "manifest": str(args.manifest),
                    "device": manifest.device,
                    "level": level,
                    "runnable": len(selected.runnable),
                    "not_run": len(selected.not_run),
                    "not_run_by_reason": dict(sorted(reasons.items())),
                },
                indent=2,
            )
        )
        return 0
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
    if args.not_run:
        for record in selected.not_run:
            if record.not_run_reason == args.not_run:
                line = json.dumps(record.to_dict()) if args.json else record.case_id
                out.write(line + "\n")
        return 0
    for spec in selected.runnable:
        out.write((json.dumps(_listed(spec)) if args.json else spec.case_id) + "\n")
    return 0


def _listed(spec: CaseSpec) -> dict[str, Any]:
    """A spec's JSON line, its surfaces joined by the overloads it reaches (the
    coverage trace), so `torchcts-isolate audit` matches rules as a run does."""
    from torchcts_cases.surface_lookup import case_surfaces

    data = spec.to_dict()
    data["surfaces"] = sorted({*spec.surfaces, *case_surfaces(spec)})
    return data


def _command(*words: str) -> str:
    """A torchcts-cases command as printed: bin/torchcts-cases at a checkout root."""
    return shlex.join([tool_command(PROG, tool_prefix_at()), *words])


def _coverage(args: argparse.Namespace) -> int:
    from torchcts_cases import coverage

    summary_path = args.results / COVERAGE_DIR / "summary.json"
    if args.action == "report":
        if not summary_path.exists():
            audit = _command("coverage", "audit", "--results", str(args.results))
            raise ValueError(f"{summary_path}: no audit yet (run `{audit}`)")
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{summary_path}: not valid JSON ({exc})") from None
        _print(_coverage_text(summary, args.json), end="")
        return 0
    summary = coverage.audit_into(args.results)
    out = args.results / COVERAGE_DIR
    _print(_coverage_text(summary, args.json), end="")
    if not args.json:
        _print(f"wrote {out}/")
    unknown = int(summary["counts"][coverage.UNKNOWN])
    if args.action == "check" and args.fail_on_unknown and unknown:
        _print(
            f"{unknown} overloads are unknown (see {out}/pending_review.json)",
            file=sys.stderr if args.json else sys.stdout,
        )
        return 1
    return 0


def _overloads(args: argparse.Namespace) -> int:
    from torchcts_cases.overload_report import summary, summary_lines

    data = summary()
    if args.json:
        _print(json.dumps(data, indent=1, sort_keys=True))
    else:
        for line in summary_lines(data, listing=args.not_generated):
            _print(line)
    return 0


def _coverage_text(summary: dict[str, Any], as_json: bool) -> str:
    from torchcts_cases import coverage

    if as_json:
        return json.dumps(summary, indent=2, sort_keys=True) + "\n"
    return coverage.summary_markdown(summary)


if __name__ == "__main__":
    sys.exit(main())
