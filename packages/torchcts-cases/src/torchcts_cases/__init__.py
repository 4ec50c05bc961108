"""Conformance cases from PyTorch OpInfo and hand-written suites, expected-result
sources and manifest selection.

Public API (see docs/contracts.md): `CaseSpec`, `Selection`, `SelectedCases`,
`select_cases`, `get_case`, `prepare` -> `PreparedCase`, `Verdict`,
`OracleUnavailable`, `write_oracle_failure`, `warm_up`, `import_case_tables`,
`watch_fallbacks`, `case_surfaces`, `refresh_coverage`, `warm_coverage`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchcts_schema import Manifest

from torchcts_cases.catalog import OPINFO_SUITE, get_case
from torchcts_cases.levels import LEVEL_DOCS
from torchcts_cases.overload_variants import SUITE as OVERLOAD_SUITE
from torchcts_cases.select import all_suites, not_run_record, select_cases
from torchcts_cases.spec import (
    CaseSpec,
    OracleUnavailable,
    SelectedCases,
    Selection,
    Verdict,
    case_seed,
)

if TYPE_CHECKING:
    from torchcts_cases.compare import RaisedError
    from torchcts_cases.fallback_watch import FallbackWatch, watch_fallbacks
    from torchcts_cases.oracle_log import oracle_failures_path, write_oracle_failure
    from torchcts_cases.prepared import PreparedCase
    from torchcts_cases.replay import use_inputs_from
    from torchcts_cases.surface_lookup import case_surfaces
    from torchcts_cases.tolerances import DEFAULT_TOLERANCES, tolerance_for

# Names whose modules import torch, loaded on first use: selection (all an xdist
# controller does with this package) must not import torch (`installed_torch`).
_LAZY = {
    "RaisedError": "compare",
    "FallbackWatch": "fallback_watch",
    "watch_fallbacks": "fallback_watch",
    "oracle_failures_path": "oracle_log",
    "write_oracle_failure": "oracle_log",
    "PreparedCase": "prepared",
    "use_inputs_from": "replay",
    "case_surfaces": "surface_lookup",
    "DEFAULT_TOLERANCES": "tolerances",
    "tolerance_for": "tolerances",
}


def __getattr__(name: str) -> Any:
    """A torch-importing name of the public API, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"


def prepare(spec: CaseSpec, manifest: Manifest) -> PreparedCase:
    """The executable form of `spec`; builds nothing until it runs."""
    if spec.suite == OPINFO_SUITE:
        from torchcts_cases.catalog import built_sample, opinfo_entry
        from torchcts_cases.opinfo_case import OpInfoCase
        from torchcts_cases.replay import replay_for

        entry = opinfo_entry(spec)
        built_from = built_sample(entry, spec.variant, spec.sample or 0)
        return OpInfoCase(
            spec, manifest, entry.get("mode"), replay_for(spec.case_id), built_from
        )
    if spec.suite == OVERLOAD_SUITE:
        from torchcts_cases.catalog import overload_entry
        from torchcts_cases.overload_case import OverloadCase

        return OverloadCase(spec, manifest, overload_entry(spec))
    from torchcts_cases.hand_case import HandPrepared
    from torchcts_cases.suites import hand_case

    return HandPrepared(spec, manifest, hand_case(spec.case_id))


def refresh_coverage(results_dir: Path) -> str:
    """Rewrite DIR/coverage/ from the cached coverage trace (never traces; a copy of
    the last refresh of the same inputs, without torch, when there is one); one line
    saying what it wrote. `torchcts-run` calls it after a whole run."""
    from torchcts_cases.coverage_refresh import refresh

    return refresh(results_dir)


def warm_coverage() -> None:
    """Prepare what `refresh_coverage` will copy (a run calls it while its cases run,
    so a refresh with new inputs does not sit in the tail after the last case)."""
    from torchcts_cases.coverage_refresh import warm

    warm()


def warm_up(specs: Iterable[CaseSpec] | None = None) -> None:
    """Import what the cases will need before the first one starts its clock.

    PyTorch's OpInfo database takes seconds to import; a process that will run OpInfo
    cases pays that once here, outside every case's limit, unless every one of them
    replays saved inputs (`use_inputs_from`). Generated overload cases replay an
    OpInfo sample too. `specs` None: assume it will. The coverage trace, which
    names each record's overloads, is read here too.
    """
    from torchcts_cases.replay import all_replayed, use_inputs_from
    from torchcts_cases.surface_lookup import reached_overloads

    reached_overloads("")  # one read of the trace per process, before any case
    listed = None if specs is None else list(specs)
    opinfo = None if listed is None else [s for s in listed if s.suite == OPINFO_SUITE]
    overloads = listed is not None and any(s.suite == OVERLOAD_SUITE for s in listed)
    if opinfo is None or overloads or (opinfo and not all_replayed(opinfo)):
        from torchcts_cases.opinfo_source import op_table

        use_inputs_from(None)  # OpInfo loads anyway: every case builds from it
        op_table()


def import_case_tables() -> None:
    """Import PyTorch's OpInfo database and nothing else (seconds), safe in a thread
    started before the plan is known; `warm_up` still decides what the cases use."""
    from torchcts_cases.opinfo_source import op_table

    op_table()


__all__ = [
    "DEFAULT_TOLERANCES",
    "LEVEL_DOCS",
    "OPINFO_SUITE",
    "CaseSpec",
    "FallbackWatch",
    "OracleUnavailable",
    "PreparedCase",
    "RaisedError",
    "SelectedCases",
    "Selection",
    "Verdict",
    "all_suites",
    "case_seed",
    "case_surfaces",
    "get_case",
    "import_case_tables",
    "not_run_record",
    "oracle_failures_path",
    "prepare",
    "refresh_coverage",
    "select_cases",
    "tolerance_for",
    "use_inputs_from",
    "warm_coverage",
    "warm_up",
    "watch_fallbacks",
    "write_oracle_failure",
]
