"""``torchcts-cases discover``: its options and what it prints.

The proposal (or, with ``--json``, the discovery object) is the only thing on stdout
unless ``--out`` takes the proposal, so ``discover ... > proposed.py`` works; the
claimed-vs-discovered table goes to stderr then. The work is `discover.discover`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts_schema import write_atomic

from torchcts_cases.discover import DEFAULT_SAMPLES, DiscoverRequest, discover
from torchcts_cases.discovery_report import JSON_NAME, MARKDOWN_NAME, json_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``torchcts-cases discover``."""
    p.add_argument(
        "--manifest", required=True, type=Path, metavar="FILE", help="the manifest"
    )
    p.add_argument(
        "--op",
        action="append",
        default=[],
        metavar="GLOB",
        help="probe only ops matching this glob (repeatable); other ops keep the "
        "manifest's claims",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=[],
        metavar="NAME",
        help="probe only this dtype (repeatable; default: every dtype)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_SAMPLES,
        metavar="N",
        help="at most N samples per op, variant and dtype (default: "
        f"{DEFAULT_SAMPLES})",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="results directory; the probe writes under DIR/discovery/ "
        "(default: results)",
    )
    p.add_argument(
        "-n",
        "--numprocesses",
        dest="workers",
        default=None,
        help="torchcts-run's workers for the probe (default: the runner's)",
    )
    p.add_argument(
        "--resume", action="store_true", help="continue an interrupted probe"
    )
    p.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="run nothing: read the probe results in DIR (a folder a previous "
        "discover of this manifest and --samples wrote)",
    )
    p.add_argument(
        "--out",
        "-o",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the proposed manifest here, atomically (default: stdout)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the discovery (dtype decisions, OPS exclusions, counts per op "
        "and dtype, the proposal text) as JSON instead",
    )


def run(args: argparse.Namespace, say: Callable[..., Any] = print) -> int:
    """Discover, write the proposal (``--out`` or stdout) and say where it went;
    `say` prints (the CLI's, which makes artifact text safe for a terminal)."""

    request = DiscoverRequest(
        manifest=args.manifest,
        results=args.results,
        samples=args.samples,
        op_globs=tuple(args.op),
        dtypes=tuple(args.dtype),
        workers=args.workers,
        resume=args.resume,
        from_results=args.from_results,
        out=args.out,
    )
    found = discover(request)
    if args.out is not None:
        write_atomic(args.out, found.manifest_text)
    if args.json:
        say(json_text(found.document), end="")
    elif args.out is None:
        say(found.manifest_text, end="")
    # the human summary never mixes into a proposal or JSON printed on stdout
    where = sys.stdout if args.out is not None and not args.json else sys.stderr
    say(found.markdown, file=where, end="")
    written = [found.run_dir / MARKDOWN_NAME, found.run_dir / JSON_NAME]
    say(
        "wrote "
        + ", ".join(p.as_posix() for p in written)
        + (f" and {args.out}" if args.out is not None else ""),
        file=where,
    )
    return 0
