"""Selection in a thread while xdist workers start, handed over through a plan file.

Selection imports torch and the case catalogue (seconds); overlapping it with worker
start-up keeps the controller off the path to the first case, and the plan file
spares every worker its own selection. The file lives in a temporary directory,
never in results/, so planning touches nothing a run has not yet claimed.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from torchcts_runner.planfile import plan_file_path, write_plan, write_plan_error
from torchcts_runner.selection import CasePlan


class BackgroundPlan:
    """One controller's plan, computed once in a thread."""

    def __init__(self, compute: Callable[[], CasePlan]) -> None:
        self._compute = compute
        self._dir: Path | None = None
        self._thread: threading.Thread | None = None
        self._planned: CasePlan | None = None
        self._error: BaseException | None = None

    @property
    def path(self) -> Path:
        """The plan file the xdist workers read (made on first use)."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="torchcts-plan-"))
        return plan_file_path(self._dir)

    @property
    def started(self) -> bool:
        """Is a plan being computed in the background?"""
        return self._thread is not None

    def now(self) -> CasePlan:
        """Compute the plan in this thread, once (the workers are chosen from it);
        `start` then only writes it."""
        if self._planned is None:
            self._planned = self._compute()
        return self._planned

    @property
    def ready(self) -> CasePlan | None:
        """The plan `now` computed, if it was asked for."""
        return self._planned

    def start(self) -> None:
        """Compute the plan in a thread and write it (or its error) for the workers."""
        path = self.path

        def work() -> None:
            try:
                if self._planned is None:
                    self._planned = self._compute()
                write_plan(path, self._planned.to_run)
            except BaseException as exc:  # re-raised by `result`, in the main thread
                self._error = exc
                write_plan_error(path, str(exc) or repr(exc))

        self._thread = threading.Thread(target=work, name="torchcts-plan", daemon=True)
        self._thread.start()

    def result(self) -> CasePlan:
        """The plan, once the thread is done (its exception raised here)."""
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._planned is not None
        return self._planned

    def remove(self) -> None:
        """Delete the plan file's directory; safe twice."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


__all__ = ["BackgroundPlan"]
