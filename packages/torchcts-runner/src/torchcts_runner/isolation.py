"""Where a case executes: in this process, or in a warm child interpreter.

The executor asks `IsolationPolicy.mode_for(spec)` for every case and hands the cases
it isolates to `IsolationPolicy.run`. Modes (``--isolate``):

- ``none``: every case in process.
- ``ledger``: cases a known-crash rule matches (packaged ``known_segfaults.json`` plus
  the project's) run in a child.
- ``adaptive``: ledger matches plus cases that crashed, timed out or hung in earlier
  runs of this run key and PyTorch minor family (``<key>_adaptive_isolation.json``
  says which and why).
- ``all``: every case in a child.

In every mode but ``none``, decisions made during the run also apply
(`torchcts_runner.isolation_decisions`): after a case crashes its worker, the rest of
its op runs in a child (``after_crash``), and a case whose process vanished without
evidence is retried once in a child (``retry``). In any mode, a process whose device
broke runs the rest of its in-process cases in children (``forced``, ``after_poison``).

A child whose device fails its health probe after a case is retired, and the case runs
once more in a child started for it (``poison_check``), which settles whether the case
broke the device (`torchcts_runner.device_health`).

Isolation only decides where a case executes. A child that returns gives the record it
wrote; a child that dies gives ``crashed`` with the signal, exit code, timeout or hang,
and a crash record with its stderr tail and faulthandler traceback. Nothing is skipped
or softened because it ran isolated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from torchcts_isolate import (
    IsolatedOutcome,
    Ledger,
    WarmPool,
    load_ledger,
)
from torchcts_schema import (
    ArtifactError,
    CaseRecord,
    CaseSpec,
    CrashKind,
    JsonDict,
    Manifest,
    NextFix,
    Status,
    load_manifest,
    record_for,
    slug,
)

from torchcts_runner.casesource import surfaces_from, surfaces_or_none, with_surfaces
from torchcts_runner.child_entry import REPRO_KIND
from torchcts_runner.crash_evidence import scratch_dir
from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.defaults import ISOLATE_MODES
from torchcts_runner.device_health import (
    POISON_CHECK,
    PROBE_AFTER,
    Finding,
    probe_failed,
    settle,
)
from torchcts_runner.isolation_decisions import DecisionReader
from torchcts_runner.known_crash_match import KnownCrashMatcher
from torchcts_runner.metadata import torch_version
from torchcts_runner.probes import PROBES_KIND
from torchcts_runner.timeouts import grace_for

CHILD_ENTRY = "torchcts_runner.child_entry:run_case"
WARM_ENTRY = "torchcts_runner.child_entry:warm_child"
# one child, plus a spare once a child is lost: a run that never crashes pays for one
# interpreter start, and from the first crash on a crash costs the next isolated case
# only the handoff
SPARES_AFTER_LOSS = 1


class IsolationPolicy:
    """Decides per case where it runs, and runs the isolated ones in a warm pool."""

    def __init__(
        self,
        requested: str,
        options: Mapping[str, Any] | None = None,
        *,
        manifest: Manifest | None = None,
        ledger: Ledger | None = None,
        torch_version: str | None = None,
    ) -> None:
        if requested not in ISOLATE_MODES:
            raise ValueError(f"--isolate {requested!r}: use one of {ISOLATE_MODES}")
        self.requested = requested
        self.options = dict(options or {})
        self.manifest = manifest
        self.ledger = ledger
        self.torch_version = torch_version
        self.hardware_key = _hardware_key(self.options, manifest)
        # the overloads a case reaches: known-crash rules match them, and a record
        # made here (a child that died) names them as the child's own records do
        self.surfaces = surfaces_from(self.options.get("case_source"))
        self.matcher = (
            KnownCrashMatcher(
                ledger,
                manifest,
                torch_version=torch_version,
                hardware_key=self.hardware_key,
                surfaces=self.surfaces,
            )
            if ledger is not None and manifest is not None
            else None
        )
        self._modes: dict[str, str] = {}
        self._pool: WarmPool | None = None
        self.decisions: DecisionReader | None = None
        self.recorder: CrashRecorder | None = None  # set by the process's executor
        self.forced: str | None = None  # isolate every in-process case, saying why
        self.device_unusable = False  # the device fails its probe in a fresh process
        # no case follows the one running now (its executor knows pytest's next item):
        # the pool then keeps no spare child warming beside the one it finishes with
        self.last_case = False
        self._surfaces_read: threading.Thread | None = None  # see `run`
        if requested != "none" and options and options.get("results_dir"):
            scratch = scratch_dir(
                Path(str(options["results_dir"])), str(options.get("run_key"))
            )
            self.decisions = DecisionReader(scratch)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> IsolationPolicy:
        """Build from the executor's options (``isolate`` plus the payload options).

        Reads the manifest, the known-crash ledger (``options["ledger"]`` or
        ``./known_segfaults.json``); a bad ledger is a usage error naming the file,
        rule and key. Nothing is written: adaptive decisions come from the
        controller, through the run's decisions file.
        """
        requested = str(options.get("isolate") or "none")
        if requested not in ISOLATE_MODES:
            raise pytest.UsageError(
                f"--isolate {requested!r}: use one of {', '.join(ISOLATE_MODES)}"
            )
        if requested == "none":
            return cls("none", options)
        try:
            manifest = load_manifest(options["manifest"])
            ledger_path = options.get("ledger")
            ledger = load_ledger(Path(ledger_path) if ledger_path else None)
        except ArtifactError as exc:
            raise pytest.UsageError(f"--isolate {requested}: {exc}") from None
        version = torch_version()
        return cls(
            requested,
            options,
            manifest=manifest,
            ledger=ledger,
            torch_version=version,
        )

    def mode_for(self, spec: Any) -> str:
        """Where the case runs: "none" (in process), or why it runs isolated:
        "ledger", "adaptive" or "all". The record's ``isolation`` field says the same."""
        if self.decisions is not None:
            decided = self.decisions.mode_for(spec)
            if decided is not None:
                return decided
        case_id = str(spec.case_id)
        mode = self._modes.get(case_id)
        if mode is None:
            mode = self._decide(spec)
            self._modes[case_id] = mode
        return self.forced if mode == "none" and self.forced else mode

    def _decide(self, spec: Any) -> str:
        if self.requested in ("none", "all"):
            return self.requested
        if self.matcher is not None and self.matcher.rules(spec):
            return "ledger"
        return "none"

    def run(self, spec: CaseSpec, payload: dict[str, Any]) -> CaseRecord:
        """Run `spec` in a warm child and turn how it ended into an honest record."""
        mode = self.mode_for(spec)
        if mode == "none":
            raise ValueError(f"{spec.case_id} runs in process (mode_for says 'none')")
        if self._pool is None:
            self.start_pool(spec.case_id)
        assert self._pool is not None
        if self._surfaces_read is None:  # read the trace while the child warms up
            self._surfaces_read = threading.Thread(
                target=self._surfaces_of,
                args=(spec,),
                name="torchcts-surfaces",
                daemon=True,
            )
            self._surfaces_read.start()
        record = self._run_in(self._pool, spec, payload, mode)
        if probe_failed(record) and not self.device_unusable:
            record, found = settle(record, lambda: self.run_fresh(spec, payload))
            self.device_unusable = found is Finding.UNUSABLE
        return record

    def start_pool(self, warm_case: str | None = None) -> None:
        """Start the run's warm pool now, if it is not started yet.

        Its child imports torch, the backend and the case catalogue in the
        background; an executor that knows it will isolate (``--isolate all``) calls
        this at session start, so that import overlaps its own start-up (selection,
        collection, probes) instead of delaying the first case. `warm_case` (a case
        id) also builds that case's inputs during the warm-up.
        """
        if self._pool is None:
            self._pool = self._new_pool(
                warm_case, 1, retire=self._spoiled, spares=SPARES_AFTER_LOSS
            )

    def run_fresh(self, spec: CaseSpec, payload: dict[str, Any]) -> CaseRecord:
        """Run `spec` in a child started for it (warmed, but it ran no case before),
        probing the device before and after it, as `device_health.settle` needs."""
        options = {**dict(payload.get("options") or {}), "probe_before": True}
        pool = self._new_pool(spec.case_id, 1)  # closed after one case: no retiring
        try:
            return self._run_in(
                pool, spec, {**payload, "options": options}, POISON_CHECK
            )
        finally:
            pool.close()

    def _run_in(
        self, pool: WarmPool, spec: CaseSpec, payload: dict[str, Any], mode: str
    ) -> CaseRecord:
        options = {**dict(payload.get("options") or {}), "isolation": mode}
        payload = {**payload, "options": options}
        limit = float(options.get("timeout_s") or self.options.get("timeout_s") or 300)
        manifest = self._manifest()
        limits = manifest.resource_limits if manifest else {}
        heartbeat = float(limits.get("hang_heartbeat_s") or limit)
        outcome = pool.run(
            payload,
            # the child's own limit fires first and returns a timeout record; this
            # watchdog ends a child that could not even do that, before the child's
            # own stage-two watchdog would end itself with a bare exit status
            timeout_s=limit + max(0.5, grace_for(limit) / 2),
            heartbeat_s=heartbeat,
            more=not self.last_case,
        )
        return self.record_of_outcome(spec, outcome, mode)

    def _manifest(self) -> Manifest | None:
        """The manifest; a ``none`` policy reads it only once it must isolate."""
        path = self.options.get("manifest")
        if self.manifest is None and path:
            try:
                self.manifest = load_manifest(str(path))
            except ArtifactError as exc:  # checked at start-up: changed since
                raise pytest.UsageError(f"isolating a case: {exc}") from None
        return self.manifest

    def _spoiled(self, result: Any) -> bool:
        """A child whose device failed its probe takes no later case (unless the
        device fails it everywhere, before any case)."""
        if self.device_unusable or not isinstance(result, dict):
            return False
        extra = result.get("extra")
        return isinstance(extra, dict) and PROBE_AFTER in extra

    def record_of_outcome(
        self, spec: CaseSpec, outcome: IsolatedOutcome, mode: str
    ) -> CaseRecord:
        """The record an isolated run earns (see the module docstring)."""
        worker = str(self.options.get("worker", "main"))
        if outcome.result is not None:
            try:
                record = CaseRecord.from_dict(outcome.result)
            except ArtifactError as exc:
                return self._harness_error(spec, outcome, mode, worker, exc.problem)
            extra = with_surfaces(record.extra, self._surfaces_of(spec))
            record = replace(record, isolation=mode, extra=extra)
            if record.crash is not None and not record.crash.evidence:
                # the child's own limit ended the case: keep its stderr and stacks
                return self._with_crash_file(spec, record, outcome)
            return record
        crash = outcome.crash_info()
        assert crash is not None
        if crash.kind is CrashKind.SUBPROCESS and outcome.exception is not None:
            return self._harness_error(spec, outcome, mode, worker, outcome.exception)
        record = record_for(
            spec,
            spec.case_id,
            status=Status.CRASHED,
            crash=crash,
            detail=f"isolated ({mode}): {crash.detail}",
            next_fix=NextFix.CRASH_EVIDENCE,
            duration_s=round(outcome.duration_s, 6),
            isolation=mode,
            worker=worker,
            extra=with_surfaces(
                {"memory_exceeded": True} if outcome.memory_exceeded else {},
                self._surfaces_of(spec),
            ),
        )
        return self._with_crash_file(spec, record, outcome)

    def _surfaces_of(self, spec: CaseSpec) -> tuple[str, ...]:
        """The overloads `spec` reaches, for a record made from a child's ending (the
        child names none: `CaseContext.name_surfaces`); the first read of the trace,
        begun beside the child's warm-up, is waited for, never done twice."""
        reading = self._surfaces_read
        if reading is not None and reading is not threading.current_thread():
            reading.join()
        return surfaces_or_none(self.surfaces, spec)

    def _harness_error(
        self,
        spec: CaseSpec,
        outcome: IsolatedOutcome,
        mode: str,
        worker: str,
        problem: str,
    ) -> CaseRecord:
        """The child ran, but the harness in it failed (import, manifest, record)."""
        kind, _, message = problem.partition(": ")
        return record_for(
            spec,
            spec.case_id,
            status=Status.ERROR,
            exception_type=kind if message else None,
            exception_message=(message or problem)[:2000],
            detail=f"harness problem in the isolation child: {outcome.detail}"[:500],
            next_fix=NextFix.CONFIGURATION,
            duration_s=round(outcome.duration_s, 6),
            isolation=mode,
            worker=worker,
            extra=with_surfaces({}, self._surfaces_of(spec)),
        )

    def _with_crash_file(
        self, spec: CaseSpec, record: CaseRecord, outcome: IsolatedOutcome
    ) -> CaseRecord:
        """Write ``<key>_crashes/<case>.json`` with the child's own evidence, through
        the run's one crash-record builder."""
        if self.recorder is None:
            return record
        return self.recorder.file_crash(
            record,
            stderr_tail=outcome.stderr_tail,
            traceback=outcome.traceback,
            stdout_tail=outcome.stdout_tail,
            build_repro=self._repro_in_child,
        )

    def _repro_in_child(self, spec: CaseSpec) -> str | None:
        """The crashed case's repro script, built by the run's warm pool (the child
        that replaces the lost one has the case source loaded; this process then
        never imports it); None when the pool is not running or its child cannot."""
        if self._pool is None:
            return None
        payload = {
            "kind": REPRO_KIND,
            "case_id": spec.case_id,
            "manifest": str(self.options.get("manifest")),
            "case_source": self.options.get("case_source"),
            "device": str(self.options.get("device")),
        }
        timeout = float(self.options.get("timeout_s") or 300)
        outcome = self._pool.run(
            payload, timeout_s=timeout, heartbeat_s=None, more=not self.last_case
        )
        script = outcome.result.get("script") if outcome.result else None
        return script if isinstance(script, str) else None

    def _new_pool(
        self,
        warm_case: str | None,
        size: int,
        retire: Callable[[Any], bool] | None = None,
        spares: int = 0,
    ) -> WarmPool:
        """A warm pool (the run's, started at its first isolated case, or a one-off);
        its children warm up on that case's inputs (CPU only), so lazy imports such
        as the OpInfo database are paid before a child takes cases, never inside a
        case's limit."""
        manifest = self._manifest()
        source = str(self.options.get("case_source") or "torchcts_cases")
        backend = manifest.backend_import if manifest else None
        preload = [m for m in (backend, source) if m]
        limits = manifest.resource_limits if manifest else {}
        memory = limits.get("memory_mb")
        warm = {
            "manifest": str(self.options.get("manifest")),
            "case_source": source,
            **({"case_id": warm_case} if warm_case else {}),
        }
        return WarmPool(
            CHILD_ENTRY,
            size=size,
            spares_after_loss=spares,
            # the child caps the device run only, as in process (CaseContext)
            memory_mb=int(memory) if memory else None,
            entry_caps_memory=True,
            retire=retire,
            preload=preload,
            warmup=(WARM_ENTRY, warm) if manifest else None,
        )

    def probe_rows(
        self, manifest: str, device: str, timeout_s: float
    ) -> list[JsonDict] | str:
        """The probe table, run as one payload of the run's warm pool (`PooledProbes`);
        the words of how the child ended when it did not return one."""
        if self._pool is None:
            self.start_pool()
        assert self._pool is not None
        payload = {"kind": PROBES_KIND, "manifest": manifest, "device": device}
        outcome = self._pool.run(
            payload, timeout_s=timeout_s, heartbeat_s=None, more=not self.last_case
        )
        rows = outcome.result.get("probe_rows") if outcome.result else None
        return list(rows) if isinstance(rows, list) else outcome.detail

    def close(self) -> None:
        """End the warm children (also done at interpreter exit)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _hardware_key(options: Mapping[str, Any], manifest: Manifest | None) -> str | None:
    """The hardware key (options, or the run key without its device prefix)."""
    if options.get("hardware_key"):
        return str(options["hardware_key"])
    run_key = str(options.get("run_key") or "")
    prefix = slug(manifest.device) + "_" if manifest else ""
    return run_key[len(prefix) :] if prefix and run_key.startswith(prefix) else None


__all__ = [
    "CHILD_ENTRY",
    "IsolationPolicy",
]
