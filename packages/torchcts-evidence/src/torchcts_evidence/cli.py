"""``torchcts-evidence``: archive, verify, backend-pack, crash-candidate.

Every refusal prints one line naming the file and the reason and exits 1; usage errors
exit 2 (argparse). No traceback reaches the user for bad input. Text from artifacts
passes through `for_terminal`. When the reader of stdout goes away (``verify | head
-1``), the command stops quietly with exit status 141, as a shell reports a process
ended by SIGPIPE, so a pipeline under ``set -o pipefail`` still sees the cut.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from torchcts_schema import (
    ArtifactError,
    HostIdentity,
    ToolParser,
    add_results_option,
    exit_codes_epilog,
    for_terminal,
    pick_results_dir,
    tool_command,
    tool_prefix_at,
)

from torchcts_evidence import __version__
from torchcts_evidence.accept import accept_packet
from torchcts_evidence.archive import build_archive
from torchcts_evidence.backend_store import PackOptions, pack_run, write_index
from torchcts_evidence.crash import build_packet, write_packet
from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.store_check import check_store
from torchcts_evidence.summary import format_verification, verification_json
from torchcts_evidence.verify import verify_archive

DEFAULT_STORE = Path("evidence/backends")
DEFAULT_LEDGER = Path("known_segfaults.json")
BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE
PROG = "torchcts-evidence"
EXIT_CODES = {
    0: "done, or the archive is accepted",
    1: "refused or rejected: every reason named, one line each",
    2: "usage error",
    BROKEN_PIPE_STATUS: "stdout closed early (e.g. piped into head)",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
        try:
            status = int(args.func(args))
        except (EvidenceError, ArtifactError) as exc:
            message = for_terminal(str(exc), keep_newlines=False)
            print(f"torchcts-evidence {args.command}: {message}", file=sys.stderr)
            status = 1
        # flush here, not at interpreter exit, so a closed pipe is caught below
        sys.stdout.flush()
    except BrokenPipeError:
        # stdout's reader is gone; point stdout at devnull so the interpreter's own
        # final flush cannot raise again, and say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    return status


def _say(text: str) -> None:
    # paths, run keys and rule ids can come from artifacts: one safe line each
    print(for_terminal(text, keep_newlines=False))


def _archive(args: argparse.Namespace) -> int:
    results = Path(pick_results_dir(args.results, args.results_dir))
    built = build_archive(
        results,
        out_dir=args.out,
        manifest=args.manifest,
        run_key=args.run_key,
    )
    _say(f"wrote {built.path} ({len(built.members)} files, run {built.run_key})")
    if built.other_runs:
        _say(
            f"note: {results} also holds {', '.join(built.other_runs)}; "
            "archived the run written last (choose another with --run-key)"
        )
    if built.scrubbed:
        _say(f"host identity scrubbed from {len(built.scrubbed)} file(s)")
    for note in built.notes:
        _say(f"note: {note}")
    evidence = tool_command("torchcts-evidence", tool_prefix_at())
    _say(f"check it with: {evidence} verify {built.path}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    result = verify_archive(args.archive)
    if args.json:
        # ensure_ascii: escapes and controls from the archive stay \u escapes
        print(json.dumps(verification_json(result), indent=1, sort_keys=True))
    else:
        print(format_verification(result))
    return 0 if result.ok else 1


def _backend_pack(args: argparse.Namespace) -> int:
    if args.reindex:
        _say(f"rebuilt {write_index(args.store)}")
        return 0
    if args.check:
        problems = check_store(args.store)
        for problem in problems:
            _say(problem)
        _say(f"{args.store}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    result = pick_results_dir(args.results, args.result, "")
    if not result:
        raise EvidenceError(
            "backend-pack needs --results DIR (a results directory or artifact), "
            "or --check / --reindex"
        )
    options = PackOptions(
        backend_gate=args.gate,
        command_intent=args.intent,
        modifications=tuple(args.modification),
        surfaces=tuple(args.surface),
    )
    identity = HostIdentity.current(roots=(Path.cwd(),))
    target, count = pack_run(Path(result), args.store, options, identity)
    _say(f"appended {count} entr{'y' if count == 1 else 'ies'} to {target}")
    return 0


def _crash_candidate(args: argparse.Namespace) -> int:
    identity = HostIdentity.current(roots=(Path.cwd(), args.results.resolve().parent))
    if args.accept is not None:
        overrides = {
            "id": args.id,
            "reason": args.reason,
            "owner": args.owner,
            "review_after": args.review_after,
            "repro": args.repro,
        }
        rule = accept_packet(args.accept, args.ledger, overrides, identity)
        _say(f"added rule {rule.id!r} to {args.ledger}")
        return 0
    if args.case is None:
        raise EvidenceError(
            "crash-candidate needs a CASE (case id or node id) or --accept"
        )
    candidate = build_packet(args.results, args.case, identity, run_key=args.run_key)
    written = write_packet(candidate, args.out)
    prefix = tool_prefix_at()
    for path in written:
        # bin/python at a checkout root: a bare python there has no torch
        python = shlex.join([tool_command("python", prefix), str(path)])
        note = f" (standalone: {python})" if path.suffix == ".py" else ""
        _say(f"wrote {path}{note}")
    if not candidate.packet.get("repro_script"):
        _say(
            "the crash record has no standalone repro script; the packet keeps "
            "the repro command"
        )
    accept = [
        tool_command(PROG, prefix),
        "crash-candidate",
        "--accept",
        str(written[0]),
    ]
    _say(
        "review the packet's proposed_rule (reason, owner, review_after), then send "
        f"it; a maintainer adds it with: {shlex.join(accept)}"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    tool = ToolParser(
        PROG,
        "Submission archives, backend evidence, known-crash candidates.",
        __version__,
        exit_codes_epilog(EXIT_CODES),
    )
    parser = tool.parser

    p = tool.add("archive", "zip the real run artifacts for submission")
    add_results_option(p, legacy="results_dir")
    p.add_argument(
        "--manifest",
        type=Path,
        metavar="FILE",
        help="the manifest the run used (default: found by the run's digest)",
    )
    p.add_argument("--run-key", help="which run, when the directory holds several")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where the zip goes (default: here)",
    )
    p.set_defaults(func=_archive)

    p = tool.add("verify", "check a received archive (executes nothing)")
    p.add_argument("archive", type=Path, metavar="ARCHIVE", help="the zip to check")
    p.add_argument(
        "--json",
        action="store_true",
        help="print {archive, accepted, problems, summary} as JSON instead of text",
    )
    p.set_defaults(func=_verify)

    p = tool.add("backend-pack", "append a run to evidence/backends/")
    add_results_option(
        p,
        legacy="result",
        help_text="results directory or artifact of the run to pack",
    )
    p.add_argument(
        "--store",
        type=Path,
        default=DEFAULT_STORE,
        metavar="DIR",
        help=f"the evidence store (default: {DEFAULT_STORE.as_posix()})",
    )
    p.add_argument("--gate", help="backend gate, e.g. 'mps:macos>=15' (path-free)")
    p.add_argument("--intent", help="what the command was meant to establish")
    p.add_argument(
        "--modification",
        action="append",
        default=[],
        help="runtime modification label (repeatable)",
    )
    p.add_argument(
        "--surface",
        action="append",
        default=[],
        help="keep only surfaces matching this glob (repeatable)",
    )
    p.add_argument("--check", action="store_true", help="verify the store and exit")
    p.add_argument("--reindex", action="store_true", help="rebuild index.json")
    p.set_defaults(func=_backend_pack)

    p = tool.add("crash-candidate", "known-segfault candidate packet")
    p.add_argument("case", nargs="?", help="case id or pytest node id")
    p.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="results directory holding the crash record (default: results)",
    )
    p.add_argument("--run-key", help="which run, when the directory holds several")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where the packet files go (default: here)",
    )
    p.add_argument(
        "--accept",
        type=Path,
        metavar="PACKET",
        help="add a reviewed packet's rule to the ledger",
    )
    p.add_argument(
        "--ledger",
        type=Path,
        default=DEFAULT_LEDGER,
        metavar="FILE",
        help=f"with --accept: the ledger to add to (default: {DEFAULT_LEDGER})",
    )
    p.add_argument("--id", help="with --accept: the rule id (default: the packet's)")
    p.add_argument(
        "--reason", help="with --accept: why the case crashes (default: the packet's)"
    )
    p.add_argument(
        "--owner", help="with --accept: who reviews the rule (default: the packet's)"
    )
    p.add_argument(
        "--review-after",
        metavar="YYYY-MM-DD",
        help="with --accept: when to look at the rule again (default: the packet's)",
    )
    p.add_argument(
        "--repro", help="with --accept: the repro command (default: the packet's)"
    )
    p.set_defaults(func=_crash_candidate)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
