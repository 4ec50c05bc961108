"""Where cases come from: the `torchcts_cases` API, loaded by module name.

The runner never generates cases; it talks to a *case source* module with the
functions the contracts name (``select_cases``, ``get_case``, ``prepare``,
``OracleUnavailable``, ``write_oracle_failure``). The default is ``torchcts_cases``;
another module with the same functions can be named with ``--torchcts-case-source``
(tests use a small fake one, other suites could plug in the same way).
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast

from torchcts_schema import CaseRecord, ExpectedSource, Manifest

DEFAULT_CASE_SOURCE = "torchcts_cases"


class CaseSpecLike(Protocol):
    """What the runner reads from a case spec (torchcts_cases.CaseSpec)."""

    @property
    def case_id(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def sample(self) -> int | None: ...
    @property
    def level(self) -> int: ...
    @property
    def expected_source(self) -> ExpectedSource: ...
    @property
    def capability(self) -> str: ...


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

    def get_case(self, case_id: str) -> CaseSpecLike:
        """One case spec by id (works in a fresh child process)."""
        return cast(CaseSpecLike, self._module.get_case(case_id))

    def prepare(self, spec: CaseSpecLike, manifest: Manifest) -> PreparedCaseLike:
        """Build the case's inputs on CPU."""
        return cast(PreparedCaseLike, self._module.prepare(spec, manifest))

    def spec_from_dict(self, data: dict[str, Any]) -> CaseSpecLike:
        """Inverse of ``CaseSpec.to_dict``."""
        return cast(CaseSpecLike, self._module.CaseSpec.from_dict(data))

    def write_oracle_failure(
        self, results_dir: Path, run_key: str, spec: CaseSpecLike, exc: BaseException
    ) -> None:
        """Append an oracle-failure diagnostic, when the source supports it."""
        writer = getattr(self._module, "write_oracle_failure", None)
        if writer is not None:
            writer(results_dir, run_key, spec, exc)

    def repro_source(
        self, spec: CaseSpecLike, manifest: Manifest, device: str
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


@cache
def load_case_source(name: str = DEFAULT_CASE_SOURCE) -> CaseSource:
    """Import the case source `name` once per process and check its functions."""
    try:
        module = importlib.import_module(name)
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


def spec_fields(spec: CaseSpecLike) -> dict[str, Any]:
    """The CaseRecord fields a spec determines."""
    return {
        "case_id": spec.case_id,
        "op": spec.op,
        "variant": spec.variant,
        "dtype": spec.dtype,
        "sample": spec.sample,
        "level": spec.level,
        "suite": spec.suite,
        "expected_source": ExpectedSource(spec.expected_source),
    }
