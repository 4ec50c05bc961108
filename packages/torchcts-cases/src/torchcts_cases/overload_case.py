"""A generated overload case prepared for execution: one aten overload called
explicitly (``torch.ops.aten.<packet>.<overload>``) with a call captured from an
OpInfo sample, or from a reviewed recipe (`overload_recipes`) or its schema
(`overload_inputs`) where no sample reaches it, in one variant (`overload_checks`), judged against the same
check run on CPU.
"""

from __future__ import annotations

from typing import Any

from torchcts_schema import Manifest

from torchcts_cases.compare import compare
from torchcts_cases.dispatch_recorder import overloads_reached
from torchcts_cases.overload_capture import Call, Donor, captured_call, copy_call
from torchcts_cases.overload_checks import observe, unsupported_against
from torchcts_cases.overload_inputs import schema_call
from torchcts_cases.overload_recipes import recipe_call
from torchcts_cases.overload_repro import overload_repro
from torchcts_cases.overload_schema import adapt_call
from torchcts_cases.overload_variants import RECIPE_DONOR, SCHEMA_DONOR
from torchcts_cases.prepared import PreparedCase
from torchcts_cases.spec import CaseSpec, OracleUnavailable, Verdict
from torchcts_cases.tolerances import Tolerance, judge_with_provenance

_UNSET: Any = object()


class OverloadCase(PreparedCase):
    """One overload in one variant, on the call its index entry names."""

    def __init__(
        self, spec: CaseSpec, manifest: Manifest, entry: dict[str, Any]
    ) -> None:
        super().__init__(spec, manifest)
        donor = entry["donor"]
        self.donor = Donor(donor["op"], donor["dtype"], donor["grad"])
        self.donor_overload: str = donor["overload"]
        self.plan: int | None = donor.get("plan")  # a schema-built call's plan
        self.functional: str = entry["functional"]
        self._call: Call | None = None
        self._reference: Any = _UNSET

    def call(self) -> Call:
        """The functional sibling's arguments on CPU, from the donor's replay (or
        the schema's plan, or the reviewed recipe)."""
        if self._call is None and self.donor.op == SCHEMA_DONOR:
            assert self.plan is not None  # `valid_entry` requires it
            self._call = schema_call(self.functional, self.plan)
        if self._call is None and self.donor.op == RECIPE_DONOR:
            self._call = recipe_call(self.functional)
        if self._call is None:
            args, kwargs = captured_call(self.donor, self.donor_overload)
            adapted = adapt_call(self.donor_overload, args, kwargs, self.functional)
            if isinstance(adapted, str):
                raise OracleUnavailable(adapted)
            self._call = adapted
        return self._call

    def reference(self) -> object:
        """The check on CPU; a CPU that raises leaves no expectation."""
        if self._reference is _UNSET:
            call = self.call()
            try:
                self._reference = observe(
                    self.spec.variant, self.spec.op, self.functional, call, "cpu"
                )
            except Exception as exc:
                raise OracleUnavailable(
                    f"CPU's own {self.spec.variant} call of aten::{self.spec.op} "
                    f"failed: {type(exc).__name__}: {str(exc)[:200]}"
                ) from exc
        return self._reference

    def run_on(self, device: str) -> object:
        """The check on `device`; a device error propagates (the runner classifies
        it), except inside the out= resize and dtype checks, where it is compared
        with the CPU's own error unless it says the kernel is missing."""
        unsupported = unsupported_against(
            self.reference(), self.manifest.unsupported_patterns
        )
        return observe(
            self.spec.variant,
            self.spec.op,
            self.functional,
            self.call(),
            device,
            unsupported,
        )

    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> Verdict:
        """Every observation against the CPU's, the property named in the path."""

        def mismatch_under(tol: Tolerance) -> str | None:
            return compare(
                expected,
                observed,
                metadata_only=metadata_only,
                tolerance=tol,
                path=self.spec.op,
            )

        return judge_with_provenance(
            mismatch_under, self.spec.dtype, self.spec.op, self.manifest.tolerances
        )

    def facts(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> dict[str, Any]:
        """The shared facts, and the aten overloads the CPU check reaches."""
        facts = super().facts(expected, observed, metadata_only=metadata_only)
        call = self.call()
        variant, target = self.spec.variant, self.spec.op
        facts["aten"] = overloads_reached(
            lambda: observe(variant, target, self.functional, call, "cpu")
        )
        facts["donor"] = {**self.donor.to_dict(), "overload": self.donor_overload}
        return facts

    def inputs(self) -> object:
        """The functional sibling's arguments, on CPU."""
        args, kwargs = copy_call(self.call())
        return {"args": args, "kwargs": kwargs}

    def repro_source(
        self, device: str, backend_import: str | None, backend_options: dict[str, Any]
    ) -> str:
        """A standalone script: the call, the check on CPU and on `device`."""
        return overload_repro(self, device, backend_import, backend_options)
