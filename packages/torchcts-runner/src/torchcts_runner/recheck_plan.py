"""The cases of ``--recheck-exclusions``: what the manifest declines, and what the
known-crash rules cover.

The case source inverts the manifest itself (`Selection.declined_only`): OPS
excludes, DTYPES False or unmatched by a regex, and capabilities not claimed become
runnable, each with the entries declining it. Known-crash rules live in the ledger,
which no case source reads, so the cases a rule covers in the manifest's normal
selection are added here, each declined by its rules (kind "known_crash"). Those run
in a child: the isolation policy sends every case a rule covers there, and a recheck
refuses ``--isolate none``. Nothing is written; the plan only says what runs.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from torchcts_schema import (
    ArtifactError,
    CaseSpec,
    Decline,
    DeclinedOutside,
    KnownCrashRule,
    Manifest,
)

from torchcts_runner.casesource import CaseSource, surfaces_from
from torchcts_runner.hardware import hardware_key
from torchcts_runner.known_crash_match import KnownCrashMatcher
from torchcts_runner.metadata import torch_version
from torchcts_runner.selection import SelectionError
from torchcts_runner.settings import RunSettings

# a known-crash rule whose cases the filters may have narrowed is recorded in
# `DeclinedOutside` with this count: some of its cases, how many unknown
UNCOUNTED = 0


class RecheckPlan:
    """`selection.RecheckCases` over a known-crash matcher (None: no ledger)."""

    def __init__(self, matcher: KnownCrashMatcher | None) -> None:
        self.matcher = matcher if matcher is not None and matcher.any_rule else None
        self.rule_sources = matcher.sources() if matcher is not None else {}
        self.rules_outside: DeclinedOutside = {}

    def __call__(
        self,
        source: CaseSource,
        manifest: Manifest,
        selected: Any,
        fields: dict[str, Any],
    ) -> tuple[list[CaseSpec], dict[str, tuple[Decline, ...]]]:
        """The runnable cases of a recheck, and the entries declining each."""
        declined: dict[str, tuple[Decline, ...]] = dict(
            getattr(selected, "declined", None) or {}
        )
        runnable = list(selected.runnable)
        lacking = [s.case_id for s in runnable if not declined.get(s.case_id)]
        if lacking:
            raise SelectionError(
                f"case source {source.name!r} cannot select for --recheck-exclusions "
                f"(no declining entry for {lacking[0]})"
            )
        if self.matcher is None:
            return runnable, declined
        for spec in runnable:
            declined[spec.case_id] += self._declines(spec)
        normal = source.select_cases(
            manifest, source.selection(**{**fields, "declined_only": False})
        )
        for spec in normal.runnable:
            rules = self._declines(spec)
            if rules:
                runnable.append(spec)
                declined[spec.case_id] = rules
        for item in self.matcher.ledger.rules:
            for dimension in narrowed_by(item.rule, fields):
                self.rules_outside[
                    (Decline("known_crash", item.rule.id), dimension)
                ] = UNCOUNTED
        return runnable, declined

    def _declines(self, spec: CaseSpec) -> tuple[Decline, ...]:
        assert self.matcher is not None
        return tuple(Decline("known_crash", i) for i in self.matcher.rule_ids(spec))


def _admitted(
    rule: KnownCrashRule, value: str | None, wanted: Sequence[str], is_glob: bool
) -> bool:
    """Does a filter admit every case of the rule in this dimension?"""
    if rule.surface is not None or value is None or any(c in value for c in "*?["):
        return False
    if is_glob:
        return any(fnmatch.fnmatchcase(value, g) for g in wanted)
    return value in wanted


def recheck_for(settings: RunSettings) -> RecheckPlan | None:
    """The recheck side of a run's plan (None for a run that is no recheck), with
    the ledgers the isolation policy reads; a bad ledger is a `SelectionError`."""
    if not settings.recheck:
        return None
    try:
        matcher = KnownCrashMatcher.load(
            settings.manifest,
            torch_version=torch_version(),
            hardware_key=hardware_key(settings.device),
            surfaces=surfaces_from(settings.case_source),
        )
    except ArtifactError as exc:
        raise SelectionError(f"--recheck-exclusions: {exc}") from None
    return RecheckPlan(matcher)


def narrowed_by(rule: KnownCrashRule, fields: dict[str, Any]) -> list[str]:
    """The filters ("suite", "op", "dtype") that may leave out cases `rule` covers.

    A filter leaves none out when the rule names one case id, or a glob whose segment
    for that filter is a plain value the filter admits.
    """
    glob = rule.case_glob or (rule.node_id.split("::", 1)[-1] if rule.node_id else "")
    parts = glob.split("/")
    suite, op, dtype = (parts[0], parts[1], parts[3]) if len(parts) == 5 else ("*",) * 3
    dtype = rule.dtype or dtype
    checks: Sequence[tuple[str, Sequence[str], str | None, bool]] = (
        ("suite", fields.get("suites") or (), suite, False),
        ("op", fields.get("op_globs") or (), op, True),
        ("dtype", fields.get("dtypes") or (), dtype, False),
    )
    out = []
    for name, wanted, value, is_glob in checks:
        if wanted and not _admitted(rule, value, wanted, is_glob):
            out.append(name)
    return out


__all__ = ["UNCOUNTED", "RecheckPlan", "narrowed_by", "recheck_for"]
