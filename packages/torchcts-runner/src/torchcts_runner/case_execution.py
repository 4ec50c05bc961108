"""Execute one case end to end: inputs on CPU, run on the device, judge, classify.

No pytest import, so the same function runs in an xdist worker and in a child
interpreter (`torchcts_runner.child_entry`). Every way a case can end becomes exactly one
`CaseRecord`; a `CaseTimeout` raised by the per-case limit becomes ``crashed``. After an
``error`` that reached the device, the device is probed (`device_health`) and a failed
probe is noted in the record for the executing process to act on.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_isolate import memory_limit
from torchcts_schema import (
    CaseRecord,
    CaseSpec,
    Manifest,
    NextFix,
    NotRunReason,
    Status,
    record_for,
)

from torchcts_runner.backend import ensure_backend
from torchcts_runner.case_evidence import Judging, with_judging_evidence
from torchcts_runner.casesource import CaseSource, with_surfaces
from torchcts_runner.classify import (
    Outcome,
    classify_device_exception,
    classify_harness_exception,
    classify_timeout,
    classify_verdict,
    exception_text,
    exception_type_name,
)
from torchcts_runner.device_adapter import DeviceAdapter
from torchcts_runner.device_families import adapter_for
from torchcts_runner.device_health import (
    PROBE_AFTER,
    PROBE_BEFORE,
    needs_probe,
    probe_device,
    with_probe,
)
from torchcts_runner.device_pinning import pin_worker
from torchcts_runner.interrupts import user_interrupted
from torchcts_runner.timeouts import CaseTimeout

# a case that could not reach its backend or device: the same in every case here
CONFIGURATION = "configuration: "


@dataclass
class CaseContext:
    """What a process needs to execute cases; built once per process."""

    manifest: Manifest
    source: CaseSource
    device: str
    results_dir: Path
    run_key: str
    worker: str = "main"
    validation: bool = False
    isolation: str = "none"
    extra: dict[str, Any] = field(default_factory=dict)
    probe_before: bool = False  # a fresh run settling a failed probe (device_health)
    probe_after: bool = True  # off once the device is known unusable from the start
    # records name the overloads their case reaches; an isolation child leaves that
    # to the run's process, which reads the coverage trace while the child warms up
    name_surfaces: bool = True
    # stage ("prepare": inputs and CPU reference; "run": device and judging; "probe":
    # a device health probe) -> guard
    deadline: Callable[[str], AbstractContextManager[object]] = lambda stage: (
        nullcontext()
    )

    adapter: DeviceAdapter | None = None  # the device family's (from `device`)
    pin_problem: str | None = None  # pinning to the worker's device failed: why
    pinned: bool = False

    @property
    def memory_mb(self) -> int | None:
        """The manifest's ``memory_mb``: the cap on the device run (``run_on``), the
        same in process and in an isolation child, so an allocation past it fails
        the same way wherever the case runs; inputs, the CPU reference, judging and
        the health probes are the harness's, never capped."""
        value = self.manifest.resource_limits.get("memory_mb")
        return int(value) if value else None

    @property
    def metadata_only(self) -> bool:
        """The meta device has no values: judge shape, dtype, strides and errors."""
        return self.device == "meta"

    @property
    def device_adapter(self) -> DeviceAdapter:
        """The adapter of this context's device (built on first use)."""
        if self.adapter is None:
            self.adapter = adapter_for(self.device)
        return self.adapter

    def pin_device(self) -> str | None:
        """Pin this process to its worker's device, once, after the backend is
        imported (`device_pinning`); None when ready, else the problem in one line.
        A pinned index is recorded in every record's extra (``device_index``)."""
        if not self.pinned:
            self.pinned = True
            try:
                index = pin_worker(self.device_adapter, self.worker)
            except Exception as exc:
                self.pin_problem = (
                    f"pinning {self.worker} to its {self.device} device failed: "
                    f"{exception_type_name(exc)}: {exception_text(exc)}"
                )
            else:
                if index is not None:
                    self.extra["device_index"] = index
        return self.pin_problem


def is_claimed(spec: CaseSpec, manifest: Manifest) -> bool:
    """Does the manifest claim this path (its capability and dtype)?"""
    if spec.capability not in manifest.capabilities:
        return False
    if spec.dtype is None:
        return True
    support = manifest.dtypes.get(spec.dtype, False)
    if isinstance(support, str):
        return re.search(support, spec.op) is not None
    return support is True


def make_record(
    spec: CaseSpec, ctx: CaseContext, outcome: Outcome, duration: float | None
) -> CaseRecord:
    """A `CaseRecord` for `spec` from its classified outcome."""
    outcome = outcome.with_next_fix()
    detail = outcome.detail
    if ctx.validation and outcome.status not in (Status.PASSED, Status.NOT_RUN):
        detail = f"validation on cpu (a harness bug): {detail or outcome.status.value}"
    return record_for(
        spec,
        spec.case_id,
        status=outcome.status,
        mismatch=outcome.mismatch,
        exception_type=outcome.exception_type,
        exception_message=outcome.exception_message,
        crash=outcome.crash,
        duration_s=None if duration is None else round(duration, 6),
        isolation=ctx.isolation,
        next_fix=outcome.next_fix,
        detail=detail,
        worker=ctx.worker,
        extra=_extra(spec, ctx),
    )


def _extra(spec: CaseSpec, ctx: CaseContext) -> dict[str, Any]:
    """The context's extra facts plus the overloads the case reaches (`surfaces`):
    what known-crash rules and the backend evidence store key on."""
    if not ctx.name_surfaces:
        return dict(ctx.extra)
    return with_surfaces(ctx.extra, ctx.source.surfaces(spec))


def _reference_unavailable(
    spec: CaseSpec, ctx: CaseContext, exc: BaseException, duration: float
) -> CaseRecord:
    # the record below still says why; the diagnostic file is extra evidence
    with contextlib.suppress(Exception):
        ctx.source.write_oracle_failure(ctx.results_dir, ctx.run_key, spec, exc)
    return record_for(
        spec,
        spec.case_id,
        status=Status.NOT_RUN,
        not_run_reason=NotRunReason.REFERENCE_UNAVAILABLE,
        next_fix=NextFix.SUPPORT_SURFACE,
        exception_type=exception_type_name(exc),
        exception_message=exception_text(exc),
        detail="the CPU reference could not be built (oracle failure diagnostic)",
        duration_s=round(duration, 6),
        isolation=ctx.isolation,
        worker=ctx.worker,
        extra=_extra(spec, ctx),
    )


def _run(spec: CaseSpec, ctx: CaseContext, judging: Judging) -> Outcome | BaseException:
    """The case itself; returns an Outcome or the oracle exception, and leaves what
    explains it in `judging`."""
    manifest = ctx.manifest
    problem = ensure_backend(manifest.backend_import, manifest.backend_options)
    problem = problem or ctx.pin_device()
    if problem is not None:
        return Outcome(
            Status.ERROR,
            detail=f"{CONFIGURATION}{problem}",
            next_fix=NextFix.CONFIGURATION,
        )
    stage = "preparing inputs"
    with ctx.deadline("prepare"):
        try:
            prepared = ctx.source.prepare(spec, manifest)
            judging.prepared = prepared
            stage = "building the CPU reference"
            try:
                expected = prepared.reference()
                judging.expected = expected
            except ctx.source.oracle_unavailable as exc:
                return exc
        except CaseTimeout:
            raise
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) and user_interrupted():
                raise
            return classify_harness_exception(exc, stage)
    with ctx.deadline("run"):
        watch = ctx.source.fallback_watch(ctx.device)
        try:
            with memory_limit(ctx.memory_mb), watch:
                observed = prepared.run_on(ctx.device)
                # the device's queued work is the case's: its errors are raised here,
                # and the duration and the comparison see finished results
                ctx.device_adapter.synchronize()
        except CaseTimeout:
            raise
        except BaseException as exc:  # SystemExit from a kernel is the case's error
            if isinstance(exc, KeyboardInterrupt) and user_interrupted():
                raise
            judging.cpu_fallback = tuple(watch.overloads)
            judging.observed = exc
            return classify_device_exception(
                exc,
                claimed=is_claimed(spec, manifest),
                cpu_ok=True,
                patterns=manifest.unsupported_patterns,
            )
        judging.cpu_fallback = tuple(watch.overloads)
        judging.observed = observed
        try:
            verdict = prepared.judge(
                expected, observed, metadata_only=ctx.metadata_only
            )
            judging.verdict = verdict
        except CaseTimeout:
            raise
        except Exception as exc:
            return classify_harness_exception(exc, "judging the result")
    return classify_verdict(
        bool(verdict.ok),
        verdict.mismatch,
        cpu_fallback=judging.cpu_fallback,
        fallback_policy=manifest.cpu_fallback,
    )


def execute_case(spec: CaseSpec, ctx: CaseContext) -> CaseRecord:
    """Run `spec` in this process and return its record (never raises for a case)."""
    before = _probe_before(ctx) if ctx.probe_before else None
    start = time.perf_counter()
    judging = Judging()
    try:
        result = _run(spec, ctx, judging)
    except CaseTimeout as exc:
        result = classify_timeout(exc.limit_s, where="interrupted in Python code")
    except MemoryError as exc:
        result = Outcome(
            Status.ERROR,
            exception_type_name(exc),
            exception_text(exc),
            detail="out of memory",
        )
    duration = time.perf_counter() - start
    if isinstance(result, BaseException):
        return _reference_unavailable(spec, ctx, result, duration)
    record = with_judging_evidence(
        make_record(spec, ctx, result, duration),
        judging,
        manifest=ctx.manifest,
        device=ctx.device,
        results_dir=ctx.results_dir,
        run_key=ctx.run_key,
    )
    if before is not None:  # a device broken before the case: nothing more to learn
        return with_probe(record, PROBE_BEFORE, before)
    # a fresh run settling blame probes after any ending but a crash
    settling = ctx.probe_before and record.status is not Status.CRASHED
    probe = ctx.probe_after and not ctx.metadata_only
    if settling or (probe and needs_probe(record.status, judging.reached_device)):
        guard = ctx.deadline("probe")
        problem = probe_device(ctx.device, ctx.manifest.backend_import, guard)
        return with_probe(record, PROBE_AFTER, problem)
    return record


def _probe_before(ctx: CaseContext) -> str | None:
    """The probe before a case, in a fresh process (its backend imported first)."""
    manifest = ctx.manifest
    if ensure_backend(manifest.backend_import, manifest.backend_options) is not None:
        return None  # the case reports the configuration problem itself
    if ctx.pin_device() is not None:
        return None  # ... and that its device could not be chosen
    return probe_device(ctx.device, manifest.backend_import, ctx.deadline("probe"))


__all__ = ["CONFIGURATION", "CaseContext", "execute_case", "is_claimed", "make_record"]
