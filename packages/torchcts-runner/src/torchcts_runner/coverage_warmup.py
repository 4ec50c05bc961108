"""results/coverage/ prepared while the cases run, so the run's end only copies it.

A whole run ends by refreshing results/coverage/ (the results page lists it among
the files of a full results directory). The case source keeps the last refresh of
the same inputs, so that is a copy in milliseconds; but the first run after its
sources, the index or torch changed audits again (about 3 CPU-s, and an import of
torch in an xdist controller), which sat in the tail after the last case. The refresh
does not depend on the run's own results, so its expensive part starts in a thread
once the first case has ended (the workers have started by then) and the end waits
for what is left of it. A failure is left to the refresh itself, which reports it.
"""

from __future__ import annotations

import contextlib
import threading

from torchcts_runner.casesource import load_case_source


class CoverageWarmUp:
    """One background preparation of the coverage refresh per run."""

    def __init__(self, case_source: str, *, wanted: bool) -> None:
        self.case_source = case_source
        self.wanted = wanted  # a whole run: the only kind that refreshes coverage
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin once (later calls do nothing)."""
        if not self.wanted or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._work, name="torchcts-coverage-warm-up", daemon=True
        )
        self._thread.start()

    def _work(self) -> None:
        # a failure here is raised again, and reported, by the refresh at the end
        with contextlib.suppress(Exception):  # CaseSourceError included
            load_case_source(self.case_source).warm_coverage()

    def wait(self) -> None:
        """Block until a started preparation has ended."""
        if self._thread is not None:
            self._thread.join()


__all__ = ["CoverageWarmUp"]
