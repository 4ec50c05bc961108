"""The known-crash ledger: packaged rules merged with the project's own.

The packaged ``torchcts_isolate/known_segfaults.json`` ships with TorchCTS; a project
adds ``known_segfaults.json`` at its root (or names one with ``--ledger PATH``). Both use
the schema's rule format and validator. A rule only sends matching cases to a child
interpreter: the case still runs and keeps whatever status it earns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from torchcts_schema import (
    KnownCrashError,
    KnownCrashRule,
    backend_matches,
    load_known_crash_rules,
)

PROJECT_LEDGER_NAME = "known_segfaults.json"


@dataclass(frozen=True)
class LedgerRule:
    """A rule and the file it came from (for error messages and the audit)."""

    rule: KnownCrashRule
    source: str  # "packaged" or the project ledger's path as given
    index: int


@dataclass(frozen=True)
class Ledger:
    """Every rule in force, packaged first, in file order."""

    rules: tuple[LedgerRule, ...]

    def for_backends(self, names: Sequence[str | None]) -> Ledger:
        """Only the rules for any of these backend names (the device type and the
        backend's name): a run on one backend never weighs another's rules."""
        wanted = [name for name in names if name]
        return Ledger(
            tuple(
                item
                for item in self.rules
                if any(backend_matches(item.rule.backend, name) for name in wanted)
            )
        )

    def rules_matching(
        self,
        case_id: str,
        node_id: str | None = None,
        surfaces: Iterable[str] = (),
        dtype: str | None = None,
        torch_version: str | None = None,
        hardware_key: str | None = None,
        backend: str | Sequence[str] | None = None,
    ) -> list[KnownCrashRule]:
        """The rules that cover this case. ``backend`` may list several names (the
        device type and the backend's name); a rule naming any of them applies."""
        names = [backend] if isinstance(backend, str) or backend is None else backend
        surfaces = tuple(surfaces)
        found = []
        for item in self.rules:
            if any(
                item.rule.matches(
                    case_id=case_id,
                    node_id=node_id,
                    surfaces=surfaces,
                    dtype=dtype,
                    torch_version=torch_version,
                    hardware_key=hardware_key,
                    backend=name,
                )
                for name in names
            ):
                found.append(item.rule)
        return found


def packaged_ledger_path() -> Path:
    """The ledger shipped inside this package."""
    return Path(str(resources.files("torchcts_isolate") / PROJECT_LEDGER_NAME))


def project_ledger_path(root: Path | None = None) -> Path:
    """``known_segfaults.json`` at the project root (the working directory)."""
    return (root or Path.cwd()) / PROJECT_LEDGER_NAME


def load_ledger(
    project: Path | None = None, *, include_packaged: bool = True
) -> Ledger:
    """Packaged rules plus ``project`` (or ``./known_segfaults.json`` when present).

    A named project ledger must exist; the default one is optional. An id used in both
    files is an error naming both, like a duplicate within one file.
    """
    sources: list[tuple[str, Path]] = []
    if include_packaged:
        sources.append(("packaged", packaged_ledger_path()))
    if project is not None:
        sources.append((str(project), project))
    elif project_ledger_path().is_file():
        sources.append((PROJECT_LEDGER_NAME, project_ledger_path()))
    items: list[LedgerRule] = []
    seen: dict[str, LedgerRule] = {}
    for source, path in sources:
        for index, rule in enumerate(load_known_crash_rules(path)):
            item = LedgerRule(rule, source, index)
            if rule.id in seen:
                first = seen[rule.id]
                raise KnownCrashError(
                    path,
                    [
                        f"rule {index} (id {rule.id!r}): key 'id': duplicate id "
                        f"(already rule {first.index} of {first.source})"
                    ],
                )
            seen[rule.id] = item
            items.append(item)
    return Ledger(tuple(items))
