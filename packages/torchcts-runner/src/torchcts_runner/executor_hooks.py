"""The executing role: collect the cases as items and run them in this process.

Present in every process that executes cases: each xdist worker, or the single
process of a run without xdist. It builds the same ordered item list everywhere,
writes the runlog start before each case, enforces the per-case limit (pytest-timeout
resolves it; the two-stage `case_deadline` applies it) and hands the isolation seam
each case. When its device fails a health probe after a case (`device_health`), it
settles the blame in a fresh child and runs no more cases on that device: an xdist
worker leaves to be replaced once the case's reports are out; a run without xdist
isolates the rest of its cases.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import (
    NODE_PREFIX,
    CaseRecord,
    CaseSpec,
    JsonDict,
    case_id_for_node,
)

from torchcts_runner.backend import ensure_backend
from torchcts_runner.case_evidence import saved_inputs_finder
from torchcts_runner.case_execution import CONFIGURATION, CaseContext, execute_case
from torchcts_runner.casesource import CaseSource, CaseSourceError, load_case_source
from torchcts_runner.crash_evidence import (
    enable_faulthandler,
    fault_file,
    leave_orphan_marker,
    leave_timeout_marker,
    leave_unusable_marker,
    scratch_dir,
)
from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.device_health import (
    AFTER_POISON,
    PROBE_LIMIT_S,
    Finding,
    probe_failed,
    settle,
)
from torchcts_runner.device_memory import WORKER_OUTPUT_KEY
from torchcts_runner.heap import end_start_up, freeze_for_exit, freeze_start_up
from torchcts_runner.interrupts import ParentWatch, ignore_interrupts
from torchcts_runner.isolation import IsolationPolicy
from torchcts_runner.items import CaseItem, build_items, keep_failure
from torchcts_runner.planfile import PlanFileError, read_plan
from torchcts_runner.probes import PROBE_TIMEOUT_S
from torchcts_runner.recheck_plan import recheck_for
from torchcts_runner.runlog import RunLog, runlog_path
from torchcts_runner.selection import CasePlan, SelectionError
from torchcts_runner.settings import RunSettings
from torchcts_runner.timeouts import BACKSTOP, case_deadline
from torchcts_runner.warm_start import WarmStart
from torchcts_runner.worker_replacement import leave_for_replacement

WARM_UP_ALLOWANCE_S = 120.0  # added to the first case's limit in each process
PLAN_WAIT_S = 1800.0  # a full-depth selection of every dtype can take minutes
HardTimeoutHook = Callable[[str, float], None]


def worker_id(config: pytest.Config) -> str:
    """``gw0``... in an xdist worker, ``main`` otherwise (never from the environment,
    which a run started inside another xdist worker inherits)."""
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


class ExecutorRole:
    """Hooks of a process that collects and executes cases."""

    def __init__(
        self,
        config: pytest.Config,
        settings: RunSettings,
        run_key: str,
        done: Callable[[], frozenset[str]],
        on_hard_timeout: HardTimeoutHook | None = None,
        plan_file: Path | None = None,
        plan: CasePlan | None = None,
        warm: WarmStart | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.run_key = run_key
        self.done = done
        self.worker = worker_id(config)
        self.plan: CasePlan | None = None
        self._given_plan = plan  # selected already (the workers were chosen from it)
        self.plan_file = plan_file
        self._on_hard_timeout = on_hard_timeout
        self.scratch = scratch_dir(settings.results_dir, run_key)
        self.runlog: RunLog | None = None  # files and the pool wait for the first case
        # read-only (manifest, ledger), so a bad ledger is a usage error at start-up
        self._policy: IsolationPolicy | None = IsolationPolicy.from_options(
            {"isolate": settings.isolate, **self.payload_options()}
        )
        self._policy.recorder = CrashRecorder(
            settings,
            run_key,
            self._policy.hardware_key or "",
            lambda: load_case_source(settings.case_source),
        )
        self.current: str | None = None  # the node id running now
        self._context: CaseContext | None = None
        self._warm = False
        self._source_warm = False
        self._warm_start = warm  # imports begun in a thread at start-up
        self._broken_by: str | None = None  # the case after which this worker leaves
        if self.worker != "main":
            ignore_interrupts()  # the controller ends its workers
            self._watch = ParentWatch(self._orphaned)

    def _orphaned(self) -> None:
        """The controller is gone: say which case was in flight, then exit."""
        if self.runlog is not None:
            leave_orphan_marker(self.scratch, self.worker, self.current)

    def _start(self) -> None:
        """Files and processes, at the first case this process starts (never at
        configure time, so --collect-only and --help leave results/ untouched)."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        enable_faulthandler(self.scratch, self.worker)
        self.runlog = RunLog(runlog_path(self.settings.results_dir, self.run_key))

    @property
    def policy(self) -> IsolationPolicy:
        """Where each case runs (built at the first case: it may read results)."""
        if self._policy is None:
            self._policy = IsolationPolicy.from_options(
                {"isolate": self.settings.isolate, **self.payload_options()}
            )
        return self._policy

    def payload_options(self) -> dict[str, Any]:
        """The ``options`` of a child payload (see `torchcts_runner.child_entry`)."""
        return {
            "run_key": self.run_key,
            "case_source": self.settings.case_source,
            "validation": self.settings.validation,
            "timeout_s": self.settings.case_timeout_s,
            "worker": self.worker,
            "results_dir": str(self.settings.results_dir),
            "manifest": str(self.settings.manifest.path),
            "device": self.settings.device,
        }

    def make_plan(self) -> CasePlan:
        """The ordered cases of this run (same in every process).

        An xdist worker reads the controller's plan (selecting again would cost
        seconds per worker) and warms its case source; a process without xdist
        selects for itself.
        """
        if self.plan_file is not None:
            return self._plan_from_controller(self.plan_file)
        if self._given_plan is not None:
            return self._given_plan
        try:
            source = load_case_source(self.settings.case_source)
            recheck = recheck_for(self.settings)
            return self.settings.plan(source, self.done(), recheck)
        except (CaseSourceError, SelectionError) as exc:
            raise pytest.UsageError(str(exc)) from None

    def _plan_from_controller(self, path: Path) -> CasePlan:
        try:
            source = load_case_source(self.settings.case_source)
            specs = read_plan(path, source.spec_from_dict, timeout_s=PLAN_WAIT_S)
        except (CaseSourceError, PlanFileError) as exc:
            raise pytest.UsageError(str(exc)) from None
        self._warm_source(source, specs)
        return CasePlan(planned=specs, to_run=specs, not_run=[])

    def _warm_source(self, source: CaseSource, specs: list[CaseSpec]) -> None:
        """The case source's one-time imports, before any case's clock starts."""
        if self._source_warm:
            return
        self._source_warm = True
        if self._warm_start is not None:
            self._warm_start.wait()  # what is left of the start-up imports
        use_saved = getattr(source.module, "use_inputs_from", None)
        if callable(use_saved):  # a rerun replays saved samples (no OpInfo import)
            s = self.settings
            root = s.results_root or s.results_dir
            use_saved(saved_inputs_finder(s.results_dir, root, self.run_key))
        warm = getattr(source.module, "warm_up", None)
        if callable(warm):
            with contextlib.suppress(Exception):  # the case itself reports problems
                warm(specs)

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """With ``--isolate all`` every case runs in the warm pool: start its child
        now, so its imports overlap selection, collection and the probes."""
        if self.settings.isolate == "all" and not self.config.option.collectonly:
            self.policy.start_pool()

    @pytest.hookimpl
    def pytest_collection(self, session: pytest.Session) -> bool:
        """Collect the cases instead of test files (no file per op)."""
        others = [a for a in self.config.args if not a.startswith(NODE_PREFIX)]
        source = getattr(self.config, "args_source", None)
        if others and source is pytest.Config.ArgsSource.ARGS:
            raise pytest.UsageError(
                "with --torchcts-manifest, positional arguments must be case node ids "
                f"({NODE_PREFIX}<case id>); got {others[0]!r}"
            )
        self.plan = self.make_plan()
        items = build_items(session, self.plan.to_run, self.run_item)
        collector = items[0].parent if items else None
        if collector is not None and self.config.getoption("timeout", None) is None:
            # on the one collector: an item's closest marker is its parent's
            collector.add_marker(pytest.mark.timeout(self.settings.case_timeout_s))
        session.items = items
        hook = self.config.hook
        hook.pytest_collectreport(
            report=pytest.CollectReport("torchcts", "passed", None, list(items))
        )
        modify_items(self.config)(
            session=session, config=self.config, items=session.items
        )
        hook.pytest_collection_finish(session=session)
        session.testscollected = len(session.items)
        return True

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        """The runlog line, written before the case runs."""
        if case_id_for_node(nodeid) is None:
            return
        if self.runlog is None:
            self._start()
        assert self.runlog is not None
        self.current = nodeid
        entry = self.runlog.start(nodeid, self.worker)
        if self._policy is not None and self._policy.recorder is not None:
            self._policy.recorder.note_start(nodeid, entry.line())

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        """No case in flight between cases; a worker whose device broke leaves now,
        its case's reports sent and its next case not started."""
        self.current = None
        if self._broken_by is not None:
            if self.runlog is not None:
                self.runlog.close()
            if self._policy is not None:
                self._policy.close()
            leave_for_replacement(self.scratch, self.worker, self._broken_by)

    @pytest.hookimpl
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """Take the limit pytest-timeout resolved; `run_item` enforces it."""
        if not isinstance(item, CaseItem):
            return None
        item.limit_s = settings.timeout
        return True

    @pytest.hookimpl
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        """Nothing to cancel: the case's own deadline ends with the case."""
        return True if isinstance(item, CaseItem) else None

    def context(self) -> CaseContext:
        """The per-process execution context (built at the first case)."""
        if self._context is None:
            s = self.settings
            self._context = CaseContext(
                manifest=s.manifest,
                source=load_case_source(s.case_source),
                device=s.device,
                results_dir=s.results_dir,
                run_key=self.run_key,
                worker=self.worker,
                validation=s.validation,
            )
        return self._context

    def warm_up(self) -> None:
        """Import the backend and the case source before the first deadline."""
        manifest = self.settings.manifest
        ensure_backend(manifest.backend_import, manifest.backend_options)
        self._warm_source(self.context().source, self.plan.to_run if self.plan else [])
        freeze_start_up()
        end_start_up()

    def payload(self, spec: CaseSpec) -> dict[str, Any]:
        """What an isolation child needs to run `spec`."""
        return {
            "case_id": spec.case_id,
            "manifest": str(self.settings.manifest.path),
            "device": self.settings.device,
            "results_dir": str(self.settings.results_dir),
            "options": self.payload_options(),
        }

    def pooled_probes(self) -> list[JsonDict] | str:
        """The probe table from the warm pool's child (``--isolate all``)."""
        return self.policy.probe_rows(
            str(self.settings.manifest.path), self.settings.device, PROBE_TIMEOUT_S
        )

    def run_item(self, item: CaseItem) -> CaseRecord:
        """Run one case where the isolation policy says, within its limit."""
        spec = item.spec
        mode = self.policy.mode_for(spec)
        if mode != "none":
            end_start_up()  # a case run here ends it in `warm_up`, after the imports
            return self.policy.run(spec, self.payload(spec))
        record = self._run_here(item)
        if probe_failed(record):
            return self._after_broken_device(item, record)
        detail = record.detail or ""
        if detail.startswith(CONFIGURATION):  # no backend or device in this process
            self._stop(item, detail)
        return record

    def _stop(self, item: CaseItem, problem: str) -> None:
        """No case can run here (the device never worked, the backend would not
        import): stop the run after this case instead of recording every other case
        as the same error; the controller tells why (exit 6)."""
        leave_unusable_marker(self.scratch, problem)
        item.session.shouldstop = f"TorchCTS: {problem}"

    def _after_broken_device(self, item: CaseItem, record: CaseRecord) -> CaseRecord:
        """The device failed its probe after the case: settle the blame in a fresh
        child, then run no more cases on this device. One that never worked (it fails
        in a fresh process before any case) stops the run: every case would error."""
        spec = item.spec
        payload = self.payload(spec)
        settled, found = settle(record, lambda: self.policy.run_fresh(spec, payload))
        if found is Finding.UNUSABLE:
            self.context().probe_after = False
            self._stop(item, settled.detail or "the device fails its health probe")
        elif self.worker == "main":
            self.policy.forced = AFTER_POISON
        else:
            self._broken_by = spec.case_id
        return settled

    def _run_here(self, item: CaseItem) -> CaseRecord:
        """Run the case in this process."""
        spec = item.spec
        limit = item.limit_s or self.settings.case_timeout_s
        first = not self._warm
        if first:
            # one-time imports (backend, case catalogue) are not the case's time, and
            # an alarm inside an import would poison this process for every later case
            self._warm = True
            self.warm_up()
        node_id = item.nodeid

        def deadline(stage: str) -> AbstractContextManager[object]:
            # the first case's inputs may import the OpInfo database: allow for it;
            # a device probe gets a short limit of its own (a broken device may hang)
            extra = WARM_UP_ALLOWANCE_S if first and stage == "prepare" else 0.0
            stage_limit = PROBE_LIMIT_S if stage == "probe" else limit

            def hard_timeout() -> None:
                leave_timeout_marker(self.scratch, self.worker, node_id, stage_limit)
                if self._on_hard_timeout is not None:
                    self._on_hard_timeout(node_id, stage_limit)

            return case_deadline(
                stage_limit + extra, hard_timeout, fault_file(self.worker)
            )

        context = self.context()
        context.deadline = deadline
        return execute_case(spec, context)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Any:
        """After a case with no next one known (the last, or an xdist worker about to
        wait for work), nothing may end this process: release the GIL-hang backstop.
        The isolation policy is told whether a case follows (its pool's spares)."""
        if self._policy is not None:
            self._policy.last_case = nextitem is None
        try:
            return (yield)
        finally:
            if nextitem is None:
                BACKSTOP.release()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self) -> Any:
        """Outside pytest's skipping plugin: an xfail mark does not hide a case
        that did not pass (`keep_failure`)."""
        report = yield
        keep_failure(report)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        """The item lets go of its record's text (`CaseItem.forget_record`)."""
        if isinstance(item, CaseItem):
            item.forget_record()

    @pytest.hookimpl(trylast=True)
    def pytest_exception_interact(self) -> None:
        """pytest's faulthandler plugin has just cancelled any armed dump (it does so
        for every test that raised), ours included."""
        BACKSTOP.forget()

    def memory_stats(self) -> dict[str, int]:
        """This process's device memory counters, when it ran cases here."""
        context = self._context
        return {} if context is None else context.device_adapter.memory_stats()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """History and reports may take a while: no backstop armed meanwhile, and no
        collection over the heap (`heap`). A worker sends its device memory counters
        to the controller."""
        BACKSTOP.release()
        freeze_for_exit()
        output = getattr(self.config, "workeroutput", None)
        if output is not None:
            output[WORKER_OUTPUT_KEY] = self.memory_stats()

    @pytest.hookimpl
    def pytest_unconfigure(self) -> None:
        """Close the runlog handle and the warm pool."""
        if self.runlog is not None:
            self.runlog.close()
        if self._policy is not None:
            self._policy.close()


def modify_items(config: pytest.Config) -> Any:
    """``pytest_collection_modifyitems`` without pytest's fixture manager, whose
    reordering groups parametrized fixtures (case items have none, so it keeps their
    order) at about 9 us an item: a second per worker at level 4."""
    manager = config.pluginmanager
    fixtures = manager.get_plugin("funcmanage")
    if fixtures is None:
        return config.hook.pytest_collection_modifyitems
    return manager.subset_hook_caller("pytest_collection_modifyitems", [fixtures])


__all__ = ["ExecutorRole", "modify_items", "worker_id"]
