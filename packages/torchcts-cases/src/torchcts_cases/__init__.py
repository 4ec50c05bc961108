"""Conformance cases from PyTorch OpInfo and hand-written suites, expected-result
sources and manifest selection.

Public API (see docs/contracts.md): `CaseSpec`, `Selection`, `SelectedCases`,
`select_cases`, `get_case`, `prepare` -> `PreparedCase`, `Verdict`,
`OracleUnavailable`, `write_oracle_failure`, `warm_up`.
"""

from __future__ import annotations

from collections.abc import Iterable

from torchcts_schema import Manifest

from torchcts_cases.catalog import OPINFO_SUITE, get_case
from torchcts_cases.compare import RaisedError
from torchcts_cases.levels import LEVEL_DOCS
from torchcts_cases.oracle_log import oracle_failures_path, write_oracle_failure
from torchcts_cases.prepared import PreparedCase
from torchcts_cases.select import all_suites, not_run_record, select_cases
from torchcts_cases.spec import (
    CaseSpec,
    OracleUnavailable,
    SelectedCases,
    Selection,
    Verdict,
    case_seed,
)
from torchcts_cases.tolerances import DEFAULT_TOLERANCES, tolerance_for

__version__ = "0.1.0"


def prepare(spec: CaseSpec, manifest: Manifest) -> PreparedCase:
    """The executable form of `spec`; builds nothing until it runs."""
    if spec.suite == OPINFO_SUITE:
        from torchcts_cases.catalog import opinfo_entry
        from torchcts_cases.opinfo_case import OpInfoCase

        return OpInfoCase(spec, manifest, opinfo_entry(spec).get("mode"))
    from torchcts_cases.hand_case import HandPrepared
    from torchcts_cases.suites import hand_case

    return HandPrepared(spec, manifest, hand_case(spec.case_id))


def warm_up(specs: Iterable[CaseSpec] | None = None) -> None:
    """Import what the cases will need before the first one starts its clock.

    PyTorch's OpInfo database takes seconds to import; a process that will run OpInfo
    cases pays that once here, outside every case's limit. `specs` None: assume it will.
    """
    if specs is None or any(spec.suite == OPINFO_SUITE for spec in specs):
        from torchcts_cases.opinfo_source import op_table

        op_table()


__all__ = [
    "DEFAULT_TOLERANCES",
    "LEVEL_DOCS",
    "OPINFO_SUITE",
    "CaseSpec",
    "OracleUnavailable",
    "PreparedCase",
    "RaisedError",
    "SelectedCases",
    "Selection",
    "Verdict",
    "all_suites",
    "case_seed",
    "get_case",
    "not_run_record",
    "oracle_failures_path",
    "prepare",
    "select_cases",
    "tolerance_for",
    "warm_up",
    "write_oracle_failure",
]
