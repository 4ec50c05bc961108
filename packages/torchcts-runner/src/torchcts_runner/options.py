"""The plugin's command-line options and the settings they resolve to.

The plugin is inert unless ``--torchcts-manifest`` is given. Short aliases
(``--level``, ``--dtype``, ``--suite``, ``--op``, ``--shard``, ``--resume``,
``--isolate``, ``--validation``) are the names the docs and ``torchcts-run`` use.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import NODE_PREFIX, Manifest, load_manifest

from torchcts_runner.casesource import DEFAULT_CASE_SOURCE
from torchcts_runner.run_folder import run_environment, subset_folder
from torchcts_runner.selection import SelectionError, parse_shard

DEFAULT_CASE_TIMEOUT_S = 120.0
ISOLATE_MODES = ("none", "ledger", "adaptive", "all")
DEFAULT_ISOLATE = "adaptive"  # the contract's default: ledger rules plus adaptive


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
    group.addoption("--torchcts-case-timeout", dest="torchcts_case_timeout", type=float,
                    default=None, metavar="S",
                    help="per-case limit when pytest-timeout gives none")  # fmt: skip


@dataclass(frozen=True)
class RunSettings:
    """Everything the options say about this run, validated."""

    manifest: Manifest
    results_dir: Path
    device: str
    level: int | None
    dtypes: tuple[str, ...]
    suites: tuple[str, ...]
    op_globs: tuple[str, ...]
    shard: tuple[int, int] | None
    resume: bool
    isolate: str
    validation: bool
    quiet: bool
    case_source: str
    case_timeout_s: float
    node_ids: tuple[str, ...] = ()
    keyword: str = ""
    markexpr: str = ""
    results_root: Path | None = None  # --results; results_dir differs for a subset

    def as_options(self) -> dict[str, Any]:
        """The JSON-able options recorded in the run metadata."""
        return {
            "level": self.level,
            "dtypes": list(self.dtypes),
            "suites": list(self.suites),
            "op_globs": list(self.op_globs),
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "isolate": self.isolate,
            "validation": self.validation,
            "case_source": self.case_source,
            "case_timeout_s": self.case_timeout_s,
            "backend_options": dict(self.manifest.backend_options),
            "environment": run_environment(self.device),
            "selection": {
                "node_ids": list(self.node_ids),
                "keyword": self.keyword,
                "markexpr": self.markexpr,
            },
        }

    @property
    def is_subset(self) -> bool:
        """Does this run select part of the manifest's cases (a rerun, a slice)?"""
        return bool(
            self.node_ids
            or self.op_globs
            or self.dtypes
            or self.suites
            or self.keyword
            or self.markexpr
        )


def resolve_settings(config: pytest.Config) -> RunSettings | None:
    """Settings from the options; None when the plugin was not asked for."""
    manifest_arg = config.getoption("torchcts_manifest")
    if not manifest_arg:
        return None
    try:
        manifest = load_manifest(Path(manifest_arg))
    except Exception as exc:
        raise pytest.UsageError(f"--torchcts-manifest: {exc}") from None
    if manifest.template:
        raise pytest.UsageError(
            f"{manifest_arg}: TEMPLATE = True; edit the manifest for your backend and "
            "delete that line"
        )
    validation = bool(config.getoption("torchcts_validation"))
    if validation and manifest.device != "cpu":
        raise pytest.UsageError(
            f"--validation judges the suite against the CPU itself; {manifest_arg} "
            f"declares DEVICE {manifest.device!r} (use manifests/cpu.py)"
        )
    level = config.getoption("torchcts_level")
    if level is not None and not 1 <= level <= 8:
        raise pytest.UsageError(f"--level {level}: must be 1-8")
    try:
        shard = parse_shard(config.getoption("torchcts_shard"))
    except SelectionError as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("torchcts_case_timeout")
    if timeout is None:
        timeout = manifest.resource_limits.get("case_timeout_s", DEFAULT_CASE_TIMEOUT_S)
    root = config.invocation_params.dir / config.getoption("torchcts_results")
    node_ids = tuple(a for a in config.args if a.startswith(NODE_PREFIX))
    keyword = str(getattr(config.option, "keyword", "") or "")
    markexpr = str(getattr(config.option, "markexpr", "") or "")
    ops = tuple(config.getoption("torchcts_ops"))
    dtypes = tuple(config.getoption("torchcts_dtypes"))
    suites = tuple(config.getoption("torchcts_suites"))
    folder = subset_folder(
        node_ids=node_ids, op_globs=ops, dtypes=dtypes, suites=suites,
        keyword=keyword, markexpr=markexpr,
    )  # fmt: skip
    return RunSettings(
        manifest=manifest,
        results_dir=root / folder if folder else root,
        results_root=root,
        node_ids=node_ids,
        keyword=keyword,
        markexpr=markexpr,
        device=manifest.device,
        level=level,
        dtypes=dtypes,
        suites=suites,
        op_globs=ops,
        shard=shard,
        resume=bool(config.getoption("torchcts_resume")),
        isolate=str(config.getoption("torchcts_isolate")),
        validation=validation,
        quiet=bool(config.getoption("torchcts_quiet")),
        case_source=str(config.getoption("torchcts_case_source")),
        case_timeout_s=float(timeout),
    )


__all__ = [
    "DEFAULT_CASE_TIMEOUT_S",
    "DEFAULT_ISOLATE",
    "ISOLATE_MODES",
    "RunSettings",
    "add_options",
    "resolve_settings",
]
