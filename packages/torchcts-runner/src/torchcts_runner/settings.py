"""The settings a run's options resolve to, validated once (`RunSettings`)."""

from __future__ import annotations

import shlex
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import (
    NODE_PREFIX,
    RESOURCE_LIMIT_MAX,
    Manifest,
    load_manifest,
    range_problem,
)

from torchcts_runner.casesource import CaseSource
from torchcts_runner.defaults import DEFAULT_CASE_TIMEOUT_S
from torchcts_runner.device_environment import run_environment
from torchcts_runner.run_folder import subset_folder
from torchcts_runner.selection import (
    CasePlan,
    RecheckCases,
    SelectionError,
    parse_shard,
    plan_cases,
)


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
    deselect: tuple[str, ...] = ()  # pytest's --deselect: node id prefixes left out
    results_root: Path | None = None  # --results; results_dir differs for a subset
    junit_all: bool = False  # list configuration-level not_run cases in the JUnit XML
    recheck: bool = False  # --recheck-exclusions: run what the manifest declines

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
                **({"deselect": list(self.deselect)} if self.deselect else {}),
            },
            **({"recheck_exclusions": True} if self.recheck else {}),
        }

    def filter_words(self) -> list[str]:
        """``--op``, ``--dtype`` and ``--suite`` as typed, each value its own pair."""
        words: list[str] = []
        for flag, values in (
            ("--op", self.op_globs),
            ("--dtype", self.dtypes),
            ("--suite", self.suites),
        ):
            for value in values:
                words += [flag, value]
        return words

    def selection_words(self) -> str:
        """The options that chose this run's cases, as typed (``-k nomatch --op
        'ab*' --shard 2/4``), and the level when the manifest chose it: what a
        line about the selection names."""
        words: list[str] = []
        for flag, value in (("-k", self.keyword), ("-m", self.markexpr)):
            if value:
                words += [flag, value]
        words += self.filter_words()
        if self.shard:
            words += ["--shard", f"{self.shard[0]}/{self.shard[1]}"]
        for prefix in self.deselect:
            words += ["--deselect", prefix]
        for flag, given in (
            ("--resume", self.resume),
            ("--recheck-exclusions", self.recheck),
        ):
            if given:
                words.append(flag)
        words += list(self.node_ids)
        if self.level is not None:
            return shlex.join([*words, "--level", str(self.level)])
        level = f"the manifest's level {self.manifest.level}"
        return f"{shlex.join(words)}; {level}" if words else level

    def plan(
        self,
        source: CaseSource,
        done: Collection[str] = (),
        recheck: RecheckCases | None = None,
    ) -> CasePlan:
        """This run's ordered cases from `source` (the one place selection options
        become a `plan_cases` call: controller and local executor both use it).
        A recheck needs its `recheck_plan.recheck_for` (the known-crash side)."""
        if self.recheck and recheck is None:
            raise ValueError("--recheck-exclusions: plan without its RecheckPlan")
        return plan_cases(
            source,
            self.manifest,
            level=self.level,
            dtypes=self.dtypes,
            suites=self.suites,
            op_globs=self.op_globs,
            shard=self.shard,
            done=done,
            node_ids=self.node_ids,
            record_outside=False,
            recheck=recheck,
        )

    @property
    def is_subset(self) -> bool:
        """Does this run select part of the manifest's cases (a rerun, a slice)?"""
        return bool(
            self.recheck
            or self.node_ids
            or self.op_globs
            or self.dtypes
            or self.suites
            or self.keyword
            or self.markexpr
            or self.deselect
            or self.shard
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
    if timeout is not None and range_problem("case_timeout_s", timeout):
        # the manifest's range: past it setitimer overflows in the first case
        most = RESOURCE_LIMIT_MAX["case_timeout_s"]
        raise pytest.UsageError(
            f"--torchcts-case-timeout {timeout}: must be above 0 and at most {most:,}"
        )
    if timeout is None:
        timeout = manifest.resource_limits.get("case_timeout_s", DEFAULT_CASE_TIMEOUT_S)
    root = config.invocation_params.dir / config.getoption("torchcts_results")
    node_ids = tuple(a for a in config.args if a.startswith(NODE_PREFIX))
    keyword = str(getattr(config.option, "keyword", "") or "")
    markexpr = str(getattr(config.option, "markexpr", "") or "")
    deselect = tuple(str(d) for d in (config.getoption("deselect", None) or ()))
    ops = tuple(config.getoption("torchcts_ops"))
    dtypes = tuple(config.getoption("torchcts_dtypes"))
    suites = tuple(config.getoption("torchcts_suites"))
    isolate = str(config.getoption("torchcts_isolate"))
    recheck = bool(config.getoption("torchcts_recheck_exclusions"))
    if recheck:
        _check_recheck(isolate, node_ids, keyword, markexpr, config)
    folder = subset_folder(
        node_ids=node_ids,
        op_globs=ops,
        dtypes=dtypes,
        suites=suites,
        keyword=keyword,
        markexpr=markexpr,
        deselect=deselect,
        shard=shard,
        recheck=recheck,
    )
    return RunSettings(
        manifest=manifest,
        results_dir=root / folder if folder else root,
        results_root=root,
        node_ids=node_ids,
        keyword=keyword,
        markexpr=markexpr,
        deselect=deselect,
        device=manifest.device,
        level=level,
        dtypes=dtypes,
        suites=suites,
        op_globs=ops,
        shard=shard,
        resume=bool(config.getoption("torchcts_resume")),
        isolate=isolate,
        validation=validation,
        quiet=bool(config.getoption("torchcts_quiet")),
        case_source=str(config.getoption("torchcts_case_source")),
        case_timeout_s=float(timeout),
        junit_all=bool(config.getoption("torchcts_junit_all")),
        recheck=recheck,
    )


def _check_recheck(
    isolate: str,
    node_ids: tuple[str, ...],
    keyword: str,
    markexpr: str,
    config: pytest.Config,
) -> None:
    """A recheck judges each manifest entry by all its cases in the selection, so
    only the filters it can account for are allowed; known crashes never run in
    process."""
    if isolate == "none":
        raise pytest.UsageError(
            "--recheck-exclusions runs the cases of known-crash rules in a child "
            "process; --isolate none would run them in this one (use ledger, "
            "adaptive or all)"
        )
    extra = [
        flag
        for flag, given in (
            ("node ids", node_ids),
            ("-k", keyword),
            ("-m", markexpr),
            ("--shard", config.getoption("torchcts_shard")),
        )
        if given
    ]
    if extra:
        raise pytest.UsageError(
            f"--recheck-exclusions selects with --op, --dtype, --suite and --level "
            f"only, not {extra[0]}"
        )


__all__ = ["RunSettings", "resolve_settings"]
