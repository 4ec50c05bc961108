"""The executable form of a case: inputs on CPU, the reference, the device run, the
judgement. Subclasses exist for OpInfo cases and for hand-written suites.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from torchcts_schema import Manifest

from torchcts_cases.case_facts import case_facts
from torchcts_cases.spec import CaseSpec, Verdict
from torchcts_cases.tolerances import tolerance_for


class PreparedCase(ABC):
    """A case ready to run: `reference` on CPU, `run_on` a device, then `judge`."""

    # a reviewed reference's own (atol, rtol), when it has one
    reviewed_tolerance: tuple[float, float] | None = None

    def __init__(self, spec: CaseSpec, manifest: Manifest) -> None:
        self.spec = spec
        self.manifest = manifest
        # the case's own documented (atol, rtol) per dtype (optimizer steps...)
        self.documented_tolerances: dict[str, tuple[float, float]] = {}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        """(atol, rtol) this case compares values of `dtype` with."""
        return tolerance_for(
            dtype,
            self.spec.op,
            self.manifest.tolerances,
            self.reviewed_tolerance,
            self.documented_tolerances,
        )

    def inputs(self) -> object:
        """The CPU inputs, for explaining a result (none when the check builds them)."""
        return ()

    def facts(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> dict[str, Any]:
        """What `torchcts-report explain` shows for a case that did not pass;
        `observed` may be the exception the device raised."""
        return case_facts(
            self.inputs(),
            expected,
            observed,
            self.tolerance,
            metadata_only=metadata_only or self.metadata_only_facts(),
        )

    def metadata_only_facts(self) -> bool:
        """Whether only metadata is defined for this case's results."""
        return False

    @abstractmethod
    def reference(self) -> object:
        """The expected result; raises `OracleUnavailable` when it cannot be built."""

    @abstractmethod
    def run_on(self, device: str) -> object:
        """Copy inputs to `device`, run, copy results back; backend errors propagate."""

    @abstractmethod
    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> Verdict:
        """Whether `observed` satisfies `expected` under this case's expected source."""

    @abstractmethod
    def repro_source(
        self, device: str, backend_import: str | None, backend_options: dict[str, Any]
    ) -> str:
        """A standalone script (torch and the backend only) that reruns this case."""
