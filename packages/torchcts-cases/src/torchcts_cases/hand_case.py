"""A hand-written case prepared for execution."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from torchcts_schema import Manifest

from torchcts_cases.compare import compare
from torchcts_cases.dispatch_recorder import overloads_reached
from torchcts_cases.prepared import PreparedCase
from torchcts_cases.repro import header, literal
from torchcts_cases.repro_check import RUNTIME, settings_block
from torchcts_cases.spec import CaseSpec, OracleUnavailable, Verdict
from torchcts_cases.suites.base import HandCase, all_hold, device_function, exact, holds
from torchcts_cases.suites.limits import RunLimits, limits_of
from torchcts_cases.tolerances import Tolerance, judge_with_provenance
from torchcts_cases.transfer import to_host

_UNSET: Any = object()


class HandPrepared(PreparedCase):
    """Runs a hand-written check on CPU (or takes its reviewed values) and the device."""

    def __init__(self, spec: CaseSpec, manifest: Manifest, case: HandCase) -> None:
        super().__init__(spec, manifest)
        self.case = case
        if case.expected is not None:
            self.reviewed_tolerance = case.tolerance
        self.documented_tolerances = {d: (a, r) for d, a, r in case.tolerances}
        self.limits = RunLimits.of(manifest)  # what the check may know of the manifest
        self._reference: Any = _UNSET

    def reference(self) -> object:
        """Reviewed values when the case has them, else the check run on CPU."""
        if self._reference is _UNSET:
            try:
                if self.case.expected is not None:
                    self._reference = self.case.expected(self.spec.dtype)
                else:
                    within = self.case.reference_context or nullcontext
                    with within(), limits_of(self.limits):
                        cpu = self.case.check("cpu", self.spec.dtype)
                    self._reference = to_host(cpu)
            except Exception as exc:
                raise OracleUnavailable(
                    f"{self.spec.case_id}: CPU check failed: {type(exc).__name__}: {exc}"
                ) from exc
        return self._reference

    def facts(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> dict[str, Any]:
        """The shared facts, and the aten overloads the check reaches on CPU."""
        facts = super().facts(expected, observed, metadata_only=metadata_only)
        dtype = self.spec.dtype
        with limits_of(self.limits):
            facts["aten"] = overloads_reached(lambda: self.case.check("cpu", dtype))
        return facts

    def metadata_only_facts(self) -> bool:
        """A legal-output check defines metadata only."""
        return self.case.metadata_only

    def run_on(self, device: str) -> object:
        """The check's observations on `device`, copied back to CPU."""
        with limits_of(self.limits):
            return to_host(self.case.check(device, self.spec.dtype))

    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> Verdict:
        """Compare observations (metadata only for legal outputs and the meta device);
        the case's reported observations are left out and become the verdict's note."""
        expected, _ = split_reported(expected, self.case.reported)
        observed, facts = split_reported(observed, self.case.reported)

        def mismatch_under(tol: Tolerance) -> str | None:
            return compare(
                expected,
                observed,
                metadata_only=metadata_only or self.case.metadata_only,
                tolerance=tol,
                path=self.spec.op,
            )

        verdict = judge_with_provenance(
            mismatch_under,
            self.spec.dtype,
            self.spec.op,
            self.manifest.tolerances,
            self.reviewed_tolerance,
            self.documented_tolerances,
        )
        if facts:
            verdict = replace(verdict, note=reported_note(facts))
        return verdict

    def repro_source(
        self, device: str, backend_import: str | None, backend_options: dict[str, Any]
    ) -> str:
        """The check's whole suite module (its helpers included, TorchCTS imports
        replaced by stand-ins), then the check on CPU (or the reviewed values) and on
        `device`, judged as TorchCTS judged them."""
        body = _suite_body(self.case.check.__module__)
        name = self.case.check.__name__
        expected = "outcome(run, 'cpu')"
        if self.case.expected is not None:
            try:  # the reviewed values themselves, as TorchCTS compared with them
                expected = literal(self.case.expected(self.spec.dtype))
            except TypeError:
                expected += "  # the reviewed values have no literal form"
        context = self.case.reference_context
        if context is not None and self.case.expected is None:
            expected_line = f"with {context.__name__}():\n    expected = {expected}\n"
        else:
            expected_line = f"expected = {expected}\n"
        meta = self.case.metadata_only or device == "meta"
        return (
            header(self.spec, backend_import, backend_options)
            + _STANDINS
            + _limits_standin(self.limits)
            + _helper_standins(body)
            + body
            + "\n\n"
            + settings_block(device, self.tolerance, meta)
            + RUNTIME
            + _run_block(name, self.spec.dtype, self.case.reported)
            + "\n\n"
            + expected_line
            + "judge(expected, outcome(run, DEVICE, expected))\n"
        )


# helper modules of the suites (torch-only code), whose source a repro carries ahead
# of the suite module that imports them
CARRIED_HELPERS = (
    "torchcts_cases.suites.rng_stats",
    "torchcts_cases.suites.rng_judges",  # uses rng_stats: carried after it
)


def _suite_body(name: str) -> str:
    """A suite module's source without its TorchCTS and __future__ imports, after the
    source of each carried helper module it imports."""
    import sys

    source = inspect.getsource(sys.modules[name])
    carried = [
        _without_project_imports(inspect.getsource(sys.modules[helper]))
        for helper in CARRIED_HELPERS
        if helper != name and f"from {helper} import" in source
    ]
    return "\n\n".join([*carried, _without_project_imports(source)])


def _without_project_imports(source: str) -> str:
    """`source` without its ``torchcts_*`` and ``__future__`` imports (whole
    statements, parenthesised ones included)."""
    import ast

    dropped: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        if any(n.startswith(("torchcts_", "__future__")) for n in names):
            dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = source.splitlines()
    return "\n".join(line for i, line in enumerate(lines, 1) if i not in dropped)


def split_reported(
    observations: object, keys: tuple[str, ...]
) -> tuple[object, dict[str, Any]]:
    """`observations` without the reported keys, and those keys' values."""
    if not keys or not isinstance(observations, dict):
        return observations, {}
    kept = {k: v for k, v in observations.items() if k not in keys}
    return kept, {k: observations[k] for k in keys if k in observations}


def reported_note(facts: dict[str, Any]) -> str:
    """One line of reported facts: ``reported, not judged: a.b=1, a.c=none``."""
    pairs: list[str] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        else:
            pairs.append(f"{path}={value}")

    walk(facts, "")
    return "reported, not judged: " + ", ".join(pairs)


def _run_block(name: str, dtype: str | None, reported: tuple[str, ...]) -> str:
    """``run(device)``: the check, its reported observations printed and left out."""
    if not reported:
        return f"\n\ndef run(device):\n    return {name}(device, {dtype!r})\n"
    return (
        f"\n\nREPORTED = {reported!r}  # printed, not judged\n"
        "\n\ndef run(device):\n"
        f"    observed = {name}(device, {dtype!r})\n"
        "    for key in REPORTED:\n"
        "        print(device, key, '(reported, not judged):', observed.pop(key, None))\n"
        "    return observed\n"
    )


def _limits_standin(limits: RunLimits) -> str:
    """``run_limits()`` returning the manifest's values, as the case saw them."""
    return (
        "\n\nclass RunLimits:\n"
        "    def __init__(self, device_count, memory_mb):\n"
        "        self.device_count, self.memory_mb = device_count, memory_mb\n"
        "\n\ndef run_limits():  # DEVICE_COUNT, RESOURCE_LIMITS memory_mb\n"
        f"    return RunLimits({limits.device_count!r}, {limits.memory_mb!r})\n"
    )


def _helper_standins(body: str) -> str:
    """The shared check helpers' own source (they need torch only); `exact` only
    when `body` calls it (its annotations name what a suite module imports)."""
    helpers: list[Callable[..., Any]] = [holds, all_hold, device_function]
    if "exact(" in body:
        helpers.append(exact)
    sources = (inspect.getsource(f) for f in helpers)
    imports = "\n\nfrom collections.abc import Callable\nfrom typing import Any\n"
    return imports + "".join("\n\n" + s for s in sources)


# what a suite module imports from TorchCTS, rebuilt so the repro needs torch only
_STANDINS = """

def case(*args, **kwargs):
    return lambda check: check


def storage_id(t):
    return int(t.untyped_storage()._cdata)


class ExpectedSource:
    CPU_REFERENCE = REVIEWED_REFERENCE = LEGAL_OUTPUT = PROPERTY = None


def find_op(segment):
    from torch.testing._internal.common_methods_invocations import op_db

    return next(o for o in op_db if (o.name + "." + o.variant_test_name
                                     if o.variant_test_name else o.name) == segment)

"""
