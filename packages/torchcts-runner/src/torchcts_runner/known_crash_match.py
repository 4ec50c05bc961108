"""Which known-crash rules cover a case, for this backend, torch and hardware.

A rule's ``surface`` glob is matched against the surfaces a case declares and the
dispatcher overloads it reaches (`surfaces`, the case source's coverage trace), so
a rule can name ``aten::add.Tensor`` and cover exactly the cases that dispatch it.

One matcher serves both users of the ledger: the isolation policy (a covered case runs
in a child) and a recheck of the exclusions (a covered case is rechecked, isolated, and
its rule judged by how it ends).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from torchcts_isolate import Ledger, load_ledger
from torchcts_schema import KnownCrashRule, Manifest, node_id_for_case

PACKAGED = "packaged"  # `LedgerRule.source` of a rule shipped with torchcts-isolate


class KnownCrashMatcher:
    """The ledger's rules, matched against cases of one manifest's backend."""

    def __init__(
        self,
        ledger: Ledger,
        manifest: Manifest,
        *,
        torch_version: str | None,
        hardware_key: str | None,
        surfaces: Callable[[Any], Iterable[str]] | None = None,
    ) -> None:
        self.backends = [manifest.device, manifest.backend_name]
        # the packaged ledger holds rules for other backends (MPS): a run here never
        # matches, lists or rechecks them, nor loads the coverage trace for them
        self.ledger = ledger.for_backends(self.backends)
        self._surfaces = surfaces
        # the overloads a case reaches matter only to a rule that names a surface
        self._by_surface = any(
            item.rule.surface is not None for item in self.ledger.rules
        )
        self.torch_version = torch_version
        self.hardware_key = hardware_key

    @classmethod
    def load(
        cls,
        manifest: Manifest,
        *,
        ledger_path: Path | None = None,
        torch_version: str | None = None,
        hardware_key: str | None = None,
        surfaces: Callable[[Any], Iterable[str]] | None = None,
    ) -> KnownCrashMatcher:
        """The packaged rules plus the project's (``ledger_path`` or
        ``./known_segfaults.json``); a bad ledger raises `ArtifactError` naming it."""
        return cls(
            load_ledger(ledger_path),
            manifest,
            torch_version=torch_version,
            hardware_key=hardware_key,
            surfaces=surfaces,
        )

    def surfaces_of(self, spec: Any) -> tuple[str, ...]:
        """The declared surfaces of `spec` and the overloads it reaches, sorted."""
        found = set(getattr(spec, "surfaces", ()) or ())
        if self._surfaces is not None:
            found.update(self._surfaces(spec))
        return tuple(sorted(found))

    def rules(self, spec: Any) -> list[KnownCrashRule]:
        """The rules covering `spec` (a `CaseSpec` or anything with its fields).

        The overloads a case reaches are looked up only when a rule names a surface:
        the lookup loads the coverage trace (0.4 s at a run's first case) and every
        case of a run asks here."""
        if not self.ledger.rules:
            return []
        return self.ledger.rules_matching(
            spec.case_id,
            node_id_for_case(spec.case_id),
            surfaces=self.surfaces_of(spec) if self._by_surface else (),
            dtype=spec.dtype,
            torch_version=self.torch_version,
            hardware_key=self.hardware_key,
            backend=self.backends,
        )

    def rule_ids(self, spec: Any) -> tuple[str, ...]:
        """The ids of `rules(spec)`, in ledger order."""
        return tuple(rule.id for rule in self.rules(spec))

    @property
    def any_rule(self) -> bool:
        """Is there a rule at all (else nothing is worth matching)?"""
        return bool(self.ledger.rules)

    def sources(self) -> dict[str, str]:
        """Rule id -> the ledger it came from ("packaged" or the project file)."""
        return {item.rule.id: item.source for item in self.ledger.rules}


__all__ = ["PACKAGED", "KnownCrashMatcher"]
