"""Where cases come from: a case source, by entry point or module name.

The runner never generates cases; it talks to a *case source* module with the
functions the contracts name (``select_cases``, ``get_case``, ``prepare``,
``OracleUnavailable``, ``write_oracle_failure``, ``watch_fallbacks``) over the
schema's case contract
(`torchcts_schema.CaseSpec`, ``Selection``, ``SelectedCases``, ``Verdict``). The
default is ``torchcts_cases``. A package plugs in another through the
``torchcts.case_sources`` entry-point group (``name = "module"``), named with
``--torchcts-case-source NAME``; a plain module name works too (the runner's tests
use a small fake one that way).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast

from torchcts_schema import CASE_SOURCE_GROUP, CaseRecord, CaseSpec, Manifest

from torchcts_runner.defaults import DEFAULT_CASE_SOURCE


class VerdictLike(Protocol):
    """A judgement: ok, and a one-line mismatch summary when not."""

    @property
    def ok(self) -> bool: ...
    @property
    def mismatch(self) -> str | None: ...


class PreparedCaseLike(Protocol):
    """A case with its CPU inputs built (torchcts_cases.PreparedCase)."""

    def reference(self) -> object: ...
    def run_on(self, device: str) -> object: ...
    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> VerdictLike: ...


class FallbackWatchLike(Protocol):
    """A context manager around a device run; afterwards `overloads` names the
    overloads that ran through the device's CPU fallback."""

    @property
    def overloads(self) -> Sequence[str]: ...
    def __enter__(self) -> object: ...
    def __exit__(self, *exc: object) -> None: ...


class _NoWatch:
    """What a case source without ``watch_fallbacks`` observes: nothing."""

    overloads: tuple[str, ...] = ()

    def __enter__(self) -> _NoWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class SelectedCasesLike(Protocol):
    """Runnable cases in a deterministic order, plus not_run accounting."""

    @property
    def runnable(self) -> list[Any]: ...
    @property
    def not_run(self) -> list[CaseRecord]: ...


class CaseSource:
    """A loaded case-source module, typed for the runner."""

    def __init__(self, name: str, module: Any) -> None:
        self.name = name
        self._module = module

    @property
    def module(self) -> Any:
        """The imported module (for optional extras such as ``warm_up``)."""
        return self._module

    @property
    def oracle_unavailable(self) -> type[BaseException]:
        """The exception `reference()` raises when no CPU expected result exists."""
        exc = getattr(self._module, "OracleUnavailable", None)
        if isinstance(exc, type) and issubclass(exc, BaseException):
            return exc
        return _NeverRaised

    def selection(self, **fields: Any) -> Any:
        """Build the source's `Selection` dataclass."""
        return self._module.Selection(**fields)

    def select_cases(self, manifest: Manifest, selection: Any) -> SelectedCasesLike:
        """Runnable cases and not_run records for `manifest` and `selection`."""
        return cast(SelectedCasesLike, self._module.select_cases(manifest, selection))

    def get_case(self, case_id: str) -> CaseSpec:
        """One case spec by id (works in a fresh child process)."""
        return cast(CaseSpec, self._module.get_case(case_id))

    def prepare(self, spec: CaseSpec, manifest: Manifest) -> PreparedCaseLike:
        """Build the case's inputs on CPU."""
        return cast(PreparedCaseLike, self._module.prepare(spec, manifest))

    def fallback_watch(self, device: str) -> FallbackWatchLike:
        """The source's ``watch_fallbacks(device)``, or one that observes nothing."""
        make = getattr(self._module, "watch_fallbacks", None)
        if make is None:
            return _NoWatch()
        return cast(FallbackWatchLike, make(device))

    def surfaces(self, spec: CaseSpec) -> tuple[str, ...]:
        """The overloads `spec` reaches (the source's ``case_surfaces``), else the
        surfaces it declares."""
        find = getattr(self._module, "case_surfaces", None)
        if find is None:
            return tuple(spec.surfaces)
        return tuple(find(spec))

    def refresh_coverage(self, results_dir: Path) -> str | None:
        """The source's ``refresh_coverage(results_dir)`` line, None without one."""
        refresh = getattr(self._module, "refresh_coverage", None)
        line = None if refresh is None else refresh(results_dir)
        return None if line is None else str(line)

    def warm_coverage(self) -> None:
        """The source's ``warm_coverage()`` (prepares what `refresh_coverage`
        writes), nothing without one."""
        warm = getattr(self._module, "warm_coverage", None)
        if warm is not None:
            warm()

    def spec_from_dict(self, data: dict[str, Any]) -> CaseSpec:
        """Inverse of ``CaseSpec.to_dict``."""
        return cast(CaseSpec, self._module.CaseSpec.from_dict(data))

    def write_oracle_failure(
        self, results_dir: Path, run_key: str, spec: CaseSpec, exc: BaseException
    ) -> None:
        """Append an oracle-failure diagnostic, when the source supports it."""
        writer = getattr(self._module, "write_oracle_failure", None)
        if writer is not None:
            writer(results_dir, run_key, spec, exc)

    def repro_source(
        self, spec: CaseSpec, manifest: Manifest, device: str
    ) -> str | None:
        """A standalone repro script for `spec`, or None when it cannot be built."""
        try:
            prepared = self.prepare(spec, manifest)
            make = getattr(prepared, "repro_source", None)
            if make is None:
                return None
            return str(
                make(device, manifest.backend_import, dict(manifest.backend_options))
            )
        except Exception:  # a repro is evidence on top; its absence is not an error
            return None


class _NeverRaised(Exception):
    """Stands in for OracleUnavailable in a source that does not define it."""


class CaseSourceError(Exception):
    """The case source module cannot be imported or lacks the contract's functions."""


def _entry_point_module(name: str) -> str | None:
    """The module a ``torchcts.case_sources`` entry point of that name names."""
    for entry in importlib.metadata.entry_points(group=CASE_SOURCE_GROUP):
        if entry.name == name:
            return str(entry.value).partition(":")[0]
    return None


@cache
def load_case_source(name: str = DEFAULT_CASE_SOURCE) -> CaseSource:
    """Import the case source `name` once per process and check its functions."""
    try:
        module = importlib.import_module(_entry_point_module(name) or name)
    except ImportError as exc:
        raise CaseSourceError(f"cannot import case source {name!r}: {exc}") from None
    missing = [
        fn
        for fn in ("Selection", "select_cases", "get_case", "prepare")
        if not hasattr(module, fn)
    ]
    if missing:
        raise CaseSourceError(
            f"case source {name!r} lacks {', '.join(missing)} (not yet implemented?)"
        )
    return CaseSource(name, module)


def with_surfaces(extra: dict[str, Any], surfaces: Sequence[str]) -> dict[str, Any]:
    """A record's `extra` naming the overloads its case reaches (``surfaces``), when
    there are any: the one way every record says it, whichever process made it (the
    case's own, or the one that saw it crash)."""
    return {**extra, "surfaces": list(surfaces)} if surfaces else dict(extra)


def surfaces_or_none(
    lookup: Callable[[Any], Sequence[str]], spec: Any
) -> tuple[str, ...]:
    """`lookup(spec)` for a record made outside the case's own run (a crash seen by
    another process): the surfaces are evidence on top of that record, so a lookup
    that raises leaves it without them rather than losing the record."""
    try:
        return tuple(lookup(spec))
    except Exception:
        return ()


def surfaces_from(name: str | None) -> Callable[[Any], tuple[str, ...]]:
    """`CaseSource.surfaces` of the case source `name` (default: the default one),
    loaded at the first call; a source that cannot load leaves declared surfaces."""

    def surfaces(spec: Any) -> tuple[str, ...]:
        try:
            source = load_case_source(name or DEFAULT_CASE_SOURCE)
        except CaseSourceError:
            return tuple(getattr(spec, "surfaces", ()) or ())
        return source.surfaces(spec)

    return surfaces
