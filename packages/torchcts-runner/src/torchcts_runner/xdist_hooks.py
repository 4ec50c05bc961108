"""The controller's xdist-only hooks, and facts read off xdist's worker objects.

Registered only when xdist drives the run; each hook delegates to `ControllerRole`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pytest

from torchcts_runner.device_memory import WORKER_OUTPUT_KEY, MemoryTally
from torchcts_runner.scheduling import CrashTolerantScheduling
from torchcts_runner.worker_choice import WorkerChoice, available_cores
from torchcts_runner.worker_threads import share_cores, threads_per_worker


class ControllerLike(Protocol):
    """What these hooks need of the controller role (`control.ControllerRole`)."""

    run_key: str
    memory: MemoryTally
    workers: WorkerChoice | None

    @property
    def plan_file(self) -> Path: ...

    def account_collected(self, node_ids: Iterable[str]) -> None: ...

    def handle_worker_crash(self, node_id: str, report: Any, node: Any) -> None: ...

    def note_workers(self, choice: WorkerChoice) -> None: ...


def report_worker(report: Any) -> str | None:
    """The xdist worker a report came from, when it came from one."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    return str(gateway.id) if gateway is not None else None


def worker_exit_status(node: Any) -> int | None:
    """The crashed worker's exit status, when the gateway exposes its process."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return int(popen.wait(timeout=5))
    except Exception:  # best effort: the faulthandler file is the main evidence
        return None


class XdistControllerHooks:
    """xdist-only hooks, registered only when xdist drives the run."""

    def __init__(self, role: ControllerLike) -> None:
        self.role = role

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """xdist's load scheduling, surviving workers that die at the same moment."""
        if getattr(config.option, "dist", "load") != "load":
            return None
        return CrashTolerantScheduling(config, log)

    @pytest.hookimpl
    def pytest_xdist_setupnodes(
        self, config: pytest.Config, specs: Sequence[Any]
    ) -> None:
        """Each worker started on this machine gets its share of the cores as
        torch's intra-op threads (`worker_threads`); the count is recorded with the
        worker choice. A worker on another host (``--tx ssh=...``) is left alone."""
        local = [spec for spec in specs if getattr(spec, "popen", None)]
        threads = threads_per_worker(len(local), available_cores())
        added = [share_cores(spec.env, os.environ, threads) for spec in local]
        choice = self.role.workers
        if choice is not None and any(added):
            self.role.note_workers(replace(choice, threads=threads))

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        """Workers get the run key and where the plan (resume already applied) is."""
        node.workerinput["torchcts_run_key"] = self.role.run_key
        node.workerinput["torchcts_plan"] = str(self.role.plan_file)

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Deselected accounting from the first worker's collection."""
        self.role.account_collected(ids)

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker finished: keep the device memory counters it sent."""
        output = getattr(node, "workeroutput", None) or {}
        worker = str(getattr(getattr(node, "gateway", None), "id", "?"))
        self.role.memory.add(worker, output.get(WORKER_OUTPUT_KEY))

    @pytest.hookimpl
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """A worker died in a case: crashed with kind and signal, then carry on."""
        self.role.handle_worker_crash(crashitem, report, report.node)


__all__ = [
    "ControllerLike",
    "XdistControllerHooks",
    "report_worker",
    "worker_exit_status",
]
