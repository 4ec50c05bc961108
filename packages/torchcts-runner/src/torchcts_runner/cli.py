"""``torchcts-run``: drive pytest with the TorchCTS plugin, xdist and pytest-timeout.

``torchcts-run --manifest FILE [options] [pytest args]`` or ``torchcts-run
--best-device``. The exit status says what a CI job needs to know (`run_judgement`);
``--json`` prints the run's end as one JSON object on stdout (`run_summary`) and sends
everything pytest prints to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from pathlib import Path
from typing import NamedTuple, NoReturn

from torchcts_schema import (
    JUNIT_SUFFIX,
    NODE_PREFIX,
    add_version_option,
    exit_codes_epilog,
    tool_command,
    tool_prefix_at,
)

from torchcts_runner import __version__
from torchcts_runner.defaults import ISOLATE_MODES
from torchcts_runner.run_child import run_child
from torchcts_runner.run_folder import USER_COMMAND_ENV
from torchcts_runner.run_judgement import (
    EXIT_CODES,
    NOT_PASSED,
    USAGE,
    judge,
)
from torchcts_runner.run_summary import run_summary, summary_text
from torchcts_runner.worker_choice import IN_PROCESS_UP_TO, available_cores, workers_for

STDERR_FD = 2  # the process's own stderr, even where sys.stderr is replaced


AUTO_WORKERS = "auto"  # pytest-xdist's -n auto: the plugin chooses by the work


def _epilog() -> str:
    return exit_codes_epilog(
        EXIT_CODES,
        "Other arguments go to pytest (-k EXPR, -x, "
        f"{NODE_PREFIX}<case id> ...), after the options above.",
    )


class _RunParser(argparse.ArgumentParser):
    """argparse whose malformed option is pytest's usage error, in one line.

    argparse exits 2 with its usage text, but CI jobs gate on pytest's exit codes,
    where 2 means interrupted and 4 a usage error (what an option pytest does not
    know gives): `torchcts-run`'s own options say the same as pytest's."""

    def error(self, message: str) -> NoReturn:
        from torchcts_schema import for_terminal

        text = for_terminal(message, keep_newlines=False)
        self.exit(USAGE, f"torchcts-run: error: {text} (--help lists the options)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _RunParser(
        prog="torchcts-run",
        description="Run the TorchCTS conformance cases a manifest selects.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version_option(parser, "torchcts-run", __version__)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--manifest", type=Path, metavar="FILE", help="the manifest.py to run"
    )
    where.add_argument(
        "--best-device",
        action="store_true",
        help="pick cuda > mps > xpu > simdev (demo faults) and its manifests/<device>.py",
    )
    add = parser.add_argument
    add(
        "--results",
        default="results",
        metavar="DIR",
        help="results directory (default: results); a subset run writes under "
        "DIR/selections/<name>/",
    )
    add(
        "--level",
        type=int,
        metavar="N",
        help="semantic level 1-8 (default: the manifest's)",
    )
    add(
        "--dtype",
        action="append",
        default=[],
        metavar="NAME",
        help="only this dtype (repeatable)",
    )
    add(
        "--op",
        action="append",
        default=[],
        metavar="GLOB",
        help="only ops matching this glob (repeatable)",
    )
    add(
        "--suite",
        action="append",
        default=[],
        metavar="NAME",
        help="only this suite (repeatable)",
    )
    add(
        "--shard", metavar="I/N", help="run shard I of N (a stable hash of the case id)"
    )
    add(
        "--resume",
        action="store_true",
        help="continue the interrupted run in --results",
    )
    add(
        "--isolate",
        choices=ISOLATE_MODES,
        help="where cases execute (default: adaptive)",
    )
    add(
        "--recheck-exclusions",
        action="store_true",
        help="run only what the manifest declines (with --op, --dtype, --suite, "
        "--level) in DIR/selections/recheck-exclusions[...]/ and write which "
        "entries now pass, with a manifest patch; the manifest is never changed",
    )
    add(
        "--validation",
        action="store_true",
        help="judge the suite against the CPU itself (cpu manifest only)",
    )
    add(
        "-n",
        "--numprocesses",
        dest="workers",
        default=None,
        help="xdist workers; 0: none, the cases run in process (default: chosen by "
        "the work: in process on 1-2 cores, where workers cost each case twice its "
        "CPU for no gain; with more cores in process up to a few thousand planned "
        "cases, else one worker per core; on an accelerator in process up to "
        f"{IN_PROCESS_UP_TO} cases, else one worker; at most the manifest's "
        "RESOURCE_LIMITS.workers; the run's header line says which and why)",
    )
    add("--quiet", action="store_true", help="plain progress lines (CI logs)")
    add(
        "--fail-on",
        default=",".join(NOT_PASSED),
        metavar="STATUSES",
        help="statuses that make the exit status 1 (default: %(default)s)",
    )
    add(
        "--no-fail",
        action="store_true",
        help="exit 0 when the run completed, whatever the cases' statuses",
    )
    add(
        "--junit-all",
        action="store_true",
        help=f"list every not_run case in <key>{JUNIT_SUFFIX} (by default the "
        "configuration-level reasons are counted in suite properties)",
    )
    add(
        "--json",
        action="store_true",
        help="print the run's end as one JSON object on stdout (exit code, counts, "
        "run key, artifact paths relative to here); pytest's output goes to stderr",
    )
    return parser


def option_strings() -> list[str]:
    """Every option string ``torchcts-run`` itself takes (the closest of them is
    suggested for an unknown option, beside pytest's)."""
    return sorted({s for a in _parser()._actions for s in a.option_strings})


def build_pytest_args(
    manifest: Path,
    workers: str | None,
    results: str,
    quiet: bool,
    passthrough: list[str],
) -> list[str]:
    """The pytest command line of a device run (`workers` None: chosen by the work)."""
    args = [
        "--torchcts-manifest",
        str(manifest),
        "--torchcts-results",
        results,
        "-o",
        "addopts=",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "--assert=plain",  # cases never use assert: skip rewriting every plugin module
        "-p",
        "no:logging",  # per-case log capture costs ~1 ms; records carry messages
        "-p",
        "no:unraisableexception",  # five gc.collect() passes over torch's heap at exit
        "-n",
        workers or AUTO_WORKERS,
        "--max-worker-restart",
        "1000000",
    ]
    if quiet:
        args.append("--torchcts-quiet")
    return [*args, *passthrough]


def _selection_args(options: argparse.Namespace) -> list[str]:
    out: list[str] = []
    if options.level is not None:
        out += ["--level", str(options.level)]
    for flag, values in (
        ("--dtype", options.dtype),
        ("--op", options.op),
        ("--suite", options.suite),
    ):
        for value in values:
            out += [flag, value]
    if options.shard:
        out += ["--shard", options.shard]
    if options.resume:
        out.append("--resume")
    if options.isolate:
        out += ["--isolate", options.isolate]
    if options.recheck_exclusions:
        out.append("--recheck-exclusions")
    if options.validation:
        out.append("--validation")
    if options.junit_all:
        out.append("--junit-all")
    return out


def _xdist_workers(path: Path) -> int:
    """The workers a run of this manifest gets on xdist (what a crashed in-process
    run continues on); reading the manifest here also makes a bad one a line
    before pytest starts."""
    from torchcts_schema import load_manifest

    manifest = load_manifest(path)
    cap = manifest.resource_limits.get("workers")
    return workers_for(manifest.device, available_cores(), int(cap) if cap else None)


def not_utf8(arguments: list[str]) -> str | None:
    """The problem with the first argument that is not valid UTF-8 (a path's bytes
    the OS gave as they are). Every artifact and the xdist channel are UTF-8: such a
    path or node id is refused here, in one line, not deep in a run or an archive."""
    for argument in arguments:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            shown = argument.encode("utf-8", "backslashreplace").decode("utf-8")
            return f"{shown} is not valid UTF-8: use a path or id that is"
    return None


def _not_a_file(path: Path) -> str:
    """Why `path` is no manifest file, in the words that are true of it."""
    if path.is_dir():
        return "is a directory; name the manifest file (e.g. manifests/cpu.py)"
    if path.exists():
        return "is not a regular file"
    return "does not exist"


def _usage(message: str) -> int:
    from torchcts_schema import for_terminal

    print(
        f"torchcts-run: error: {for_terminal(message, keep_newlines=False)}",
        file=sys.stderr,
    )
    return USAGE


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``torchcts-run``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    options, passthrough = parser.parse_known_args(argv)
    os.environ.setdefault(USER_COMMAND_ENV, _user_command(argv))
    if not options.json:
        prepared = _prepare(options, passthrough)
        if isinstance(prepared, int):
            return prepared
        return run_pytest(
            prepared.args,
            fail_on=prepared.fail_on,
            continue_on=prepared.continue_on,
        )
    # stdout carries the JSON object alone; every human line goes to stderr
    status: dict[str, object] | None = None
    error: list[str] = []
    with contextlib.redirect_stdout(sys.stderr):
        prepared = _prepare(options, passthrough, errors=error)
        if isinstance(prepared, int):
            code = prepared
        else:
            pytest_code, status = run_child(
                prepared.args, stdout=STDERR_FD, continue_on=prepared.continue_on
            )
            code = judge(pytest_code, status, prepared.fail_on)
    summary = run_summary(
        code,
        status,
        cwd=Path.cwd(),
        exit_meaning=EXIT_CODES.get(code, "pytest's own exit status"),
        error=error[0] if error else None,
    )
    sys.stdout.write(summary_text(summary))
    sys.stdout.flush()
    return code


class Prepared(NamedTuple):
    """What `main` runs: pytest's arguments, the statuses that fail the run, and
    the workers an in-process run that dies continues on (None: not continued)."""

    args: list[str]
    fail_on: set[str]
    continue_on: int | None


def _prepare(
    options: argparse.Namespace,
    passthrough: list[str],
    *,
    errors: list[str] | None = None,
) -> Prepared | int:
    """The pytest arguments, fail-on statuses and continuation workers, or the
    usage exit status."""

    def usage(message: str) -> int:
        if errors is not None:
            errors.append(message)
        return _usage(message)

    if options.best_device:
        from torchcts_runner.hardware import best_device

        device, why = best_device()
        manifest = Path("manifests") / f"{device}.py"
        print(f"torchcts-run: {why} ({manifest.as_posix()})", flush=True)
        if device == "simdev":
            os.environ.setdefault("TORCHCTS_SIMDEV_PROFILE", "demo")
    else:
        manifest = options.manifest
    if not manifest.is_file():
        return usage(f"manifest {manifest} {_not_a_file(manifest)}")
    try:
        workers = _xdist_workers(manifest)
    except Exception as exc:  # a bad manifest is one clear line, not a traceback
        return usage(str(exc))
    fail_on = {s.strip() for s in options.fail_on.split(",") if s.strip()}
    unknown = fail_on - {*NOT_PASSED, "passed", "not_run", "skipped"}
    if unknown:
        return usage(f"--fail-on: unknown status {sorted(unknown)[0]!r}")
    unreadable = not_utf8([str(manifest), str(options.results), *passthrough])
    if unreadable is not None:
        return usage(unreadable)
    args = build_pytest_args(
        manifest,
        options.workers,
        options.results,
        options.quiet,
        [*_selection_args(options), *passthrough],
    )
    chosen_by_work = options.workers in (None, AUTO_WORKERS)
    return Prepared(
        args, set() if options.no_fail else fail_on, workers if chosen_by_work else None
    )


def _user_command(argv: list[str]) -> str:
    """What the user typed, with every path as `usable_path` writes it: printed as
    the command that continues a run, so it must work pasted where the run started
    (a manifest outside the working directory keeps its ``..`` or ``~/`` route), and
    kept in the run's metadata, so never absolute (``--opt=/abs/path`` included)."""
    from torchcts_runner.metadata import usable_path

    def word(arg: str) -> str:
        if os.sep not in arg:
            return arg
        name, eq, value = arg.partition("=")
        if eq and name.startswith("--"):
            return f"{name}={usable_path(value)}"
        return usable_path(arg)

    words = [word(a) for a in argv]
    return shlex.join([tool_command("torchcts-run", tool_prefix_at()), *words])


def run_pytest(
    args: list[str],
    *,
    fail_on: set[str] | None = None,
    continue_on: int | None = None,
) -> int:
    """Run pytest in a child process and judge how the run ended.

    A child, because a hang that holds the GIL can only be ended by faulthandler's
    ``_exit(1)``, which would look like "some cases failed" from inside; the status
    file the plugin writes at a normal session end tells the two apart. SIGINT and
    SIGTERM are the child's to handle (it writes a partial report); this process
    only waits for it, passes a SIGTERM on, and reports.
    """
    fail_on = set(NOT_PASSED) if fail_on is None else fail_on
    code, status = run_child(args, continue_on=continue_on)
    return judge(code, status, fail_on)


if __name__ == "__main__":
    sys.exit(main())
