"""The plugin's command-line options (registration only: `settings` resolves them).

The plugin is inert unless ``--torchcts-manifest`` is given. Short aliases
(``--results``, ``--level``, ``--dtype``, ``--suite``, ``--op``, ``--shard``,
``--resume``, ``--isolate``, ``--recheck-exclusions``, ``--validation``,
``--junit-all``) are the names the docs
and ``torchcts-run`` use. Help strings are plain text: pytest prints them as they are.
"""

from __future__ import annotations

import argparse

import pytest

from torchcts_runner.defaults import DEFAULT_CASE_SOURCE, DEFAULT_ISOLATE, ISOLATE_MODES


def add_options(parser: pytest.Parser) -> None:
    """Register the torchcts option group."""
    group = parser.getgroup("torchcts", "TorchCTS conformance run")
    group.addoption(
        "--torchcts-manifest",
        metavar="FILE",
        default=None,
        help="run the TorchCTS cases this manifest selects (enables the plugin)",
    )
    group.addoption(
        "--torchcts-results",
        "--results",
        dest="torchcts_results",
        metavar="DIR",
        default="results",
        help="results directory (default: results)",
    )
    group.addoption(
        "--torchcts-level",
        "--level",
        dest="torchcts_level",
        type=int,
        default=None,
        help="semantic level 1-8 (default: the manifest's)",
    )
    group.addoption(
        "--torchcts-dtype",
        "--dtype",
        dest="torchcts_dtypes",
        action="append",
        default=[],
        help="only this dtype (repeatable)",
    )
    group.addoption(
        "--torchcts-suite",
        "--suite",
        dest="torchcts_suites",
        action="append",
        default=[],
        help="only this suite (repeatable)",
    )
    group.addoption(
        "--torchcts-op",
        "--op",
        dest="torchcts_ops",
        action="append",
        default=[],
        help="only ops matching this glob (repeatable)",
    )
    group.addoption(
        "--torchcts-shard",
        "--shard",
        dest="torchcts_shard",
        default=None,
        metavar="I/N",
        help="run shard I of N (stable hash of the case id)",
    )
    group.addoption(
        "--torchcts-resume",
        "--resume",
        dest="torchcts_resume",
        action="store_true",
        help="continue the run key's journal",
    )
    group.addoption(
        "--torchcts-isolate",
        "--isolate",
        dest="torchcts_isolate",
        choices=ISOLATE_MODES,
        default=DEFAULT_ISOLATE,
        help="where cases execute: none|ledger|adaptive|all (default: adaptive, "
        "which also applies the known-crash ledger)",
    )
    group.addoption(
        "--torchcts-recheck-exclusions",
        "--recheck-exclusions",
        dest="torchcts_recheck_exclusions",
        action="store_true",
        help="run only what the manifest declines (OPS excludes, DTYPES False or "
        "unmatched, capabilities not claimed, known-crash rules in a child) and "
        "report which entries now pass, with a manifest patch removing them",
    )
    group.addoption(
        "--torchcts-validation",
        "--validation",
        dest="torchcts_validation",
        action="store_true",
        help="judge the suite against the CPU itself (cpu manifest only)",
    )
    group.addoption(
        "--torchcts-quiet",
        dest="torchcts_quiet",
        action="store_true",
        help="progress as plain periodic lines (CI logs)",
    )
    group.addoption(
        "--torchcts-case-source",
        dest="torchcts_case_source",
        default=DEFAULT_CASE_SOURCE,
        metavar="MODULE",
        help="module providing the cases (default: torchcts_cases)",
    )
    group.addoption(
        "--torchcts-status-file",
        dest="torchcts_status_file",
        default=None,
        metavar="FILE",
        help=argparse.SUPPRESS,
    )
    group.addoption(
        "--torchcts-junit-all",
        "--junit-all",
        dest="torchcts_junit_all",
        action="store_true",
        help="list every not_run case in the JUnit XML (by default the "
        "configuration-level reasons are counted in suite properties)",
    )
    group.addoption(
        "--torchcts-case-timeout",
        dest="torchcts_case_timeout",
        type=float,
        default=None,
        metavar="S",
        help="per-case time limit in seconds when pytest-timeout gives none "
        "(default: the manifest's RESOURCE_LIMITS case_timeout_s)",
    )


__all__ = ["add_options"]
