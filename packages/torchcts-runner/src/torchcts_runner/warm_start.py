"""The executing process's one-time imports, started in a thread as soon as a run
is asked for.

A process that runs cases imports torch and the case source (seconds) and, for
OpInfo cases, PyTorch's OpInfo database (3.6 CPU-s here, measured). Done in order
they sit on the path to the first case: an xdist worker imported the database only
after the controller's plan had arrived, though it spent most of its start-up
waiting for that plan. Started from pytest's first hook instead, the imports overlap
the plan wait, selection's reading of the index and journal, collection and the
run's start; the process's main thread then waits only for what is left.

Nothing is decided here: an import that fails in the thread is imported again where
it always was, and raises there; which cases replay saved inputs instead of OpInfo
is still `warm_up`'s decision (a run that names node ids may replay them all, so
the database is not imported ahead for it). No pytest.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from torchcts_runner.casesource import load_case_source

CASE_TABLES_HOOK = "import_case_tables"  # the case source's import-only warm-up


def stages_for(
    *, worker: bool, workers: object, names_cases: bool
) -> tuple[bool, bool]:
    """(import the case source, import its tables now) for a process.

    `workers` is pytest's ``-n`` value: 0 or None run the cases here, a number makes
    this process an xdist controller, which executes nothing and imports no torch
    (selection does not need it). ``"auto"`` decides after selecting: the imports
    start then, once the plan says in process (`pytest_xdist_auto_num_workers`),
    except for a run that names node ids, which nearly always runs here: its import
    starts at once, beside selection. An xdist worker always executes.
    """
    here = worker or workers in (None, 0)
    if not here:
        return workers == "auto" and names_cases, False
    return True, not names_cases


def _source(name: str) -> None:
    load_case_source(name)


class WarmStart:
    """The imports of one process, each stage in a daemon thread, in order."""

    def __init__(self, case_source: str) -> None:
        self.case_source = case_source
        self._threads: list[threading.Thread] = []
        self.tables = False  # the case tables' import was asked for

    def _spawn(self, work: Callable[[], None]) -> None:
        before = self._threads[-1] if self._threads else None

        def run() -> None:
            if before is not None:
                before.join()
            # a failure here is raised again by the main thread's own import
            with contextlib.suppress(BaseException):
                work()

        thread = threading.Thread(target=run, name="torchcts-warm-start", daemon=True)
        self._threads.append(thread)
        thread.start()

    def start(self) -> None:
        """Import the case source (and so torch)."""
        self._spawn(lambda: _source(self.case_source))

    def add_case_tables(self) -> None:
        """Then import the case source's tables (the OpInfo database); once."""
        if self.tables:
            return
        self.tables = True

        def tables() -> None:
            source = load_case_source(self.case_source)
            hook = getattr(source.module, CASE_TABLES_HOOK, None)
            if callable(hook):
                hook()

        self._spawn(tables)

    def wait(self) -> None:
        """Block until every stage asked for has ended (successful or not)."""
        for thread in self._threads:
            thread.join()


__all__ = ["CASE_TABLES_HOOK", "WarmStart", "stages_for"]
