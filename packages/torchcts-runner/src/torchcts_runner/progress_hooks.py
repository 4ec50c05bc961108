"""The hooks that keep the progress line honest: which cases are running, and whose
text is about to reach the terminal.

Registered by the controller when its progress starts. It tells `Progress` when a
case starts and stops running (for the stall hint), and routes pytest's terminal
writer (xdist's "bringing up nodes...", a node going down, failures) through
`Progress.foreign`, so the live line ends with a newline before anyone else writes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
from torchcts_schema import case_id_for_node, write_all

from torchcts_runner.progress import Progress

PLUGIN_NAME = "torchcts-progress"


class ProgressHooks:
    """Feeds `progress` from pytest's hooks; closes it at the latest at unconfigure."""

    def __init__(self, progress: Progress, terminal: int | None = None) -> None:
        self.progress = progress
        self._terminal = terminal  # our own descriptor of the terminal, if any

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        """A case began (in this process or on a worker)."""
        case_id = case_id_for_node(nodeid)
        if case_id is not None:
            self.progress.started(case_id)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A case's own work is over after its call (or a failed setup, or a dead
        worker's "???" report); teardown is quick and not worth naming."""
        case_id = case_id_for_node(report.nodeid)
        if case_id is not None and (report.when != "setup" or report.failed):
            self.progress.ended(case_id)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Never leave the ticker running or the line open, however the run ended."""
        self.progress.close()
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None


def _guard_terminal(config: pytest.Config, progress: Progress) -> None:
    """Every write of pytest's terminal writer ends the live line first."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    writer = config.get_terminal_writer()
    original = writer.write

    def write(msg: str, *, flush: bool = False, **markup: Any) -> None:
        def emit() -> None:
            original(
                msg, flush=True, **markup
            )  # flushed: stdout and stderr share a tty

        if msg:
            progress.foreign(emit, ends_line=msg.endswith("\n"))

    # an instance attribute shadows the method: TerminalWriter has no hook for this
    writer.write = write  # type: ignore[method-assign]


def _hide_file_names(config: pytest.Config) -> None:
    """pytest writes an item's file name before its letters; a case has no file
    (its name is the ``torchcts`` prefix) and its letter is replaced by progress, so
    the name stood alone on a line the run never finished, the line a case dying in
    process left its ``torchcts`` on. xdist's reporter turns the names off too."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and config.get_verbosity() <= 0:
        reporter.showfspath = False


def watch_progress(
    config: pytest.Config,
    progress: Progress,
    *,
    ticking: bool,
    terminal: int | None = None,
) -> None:
    """Register the hooks, guard the terminal, and start the ticker when `ticking`;
    `terminal` (from `own_terminal`) is closed when the progress closes."""
    config.pluginmanager.register(ProgressHooks(progress, terminal), PLUGIN_NAME)
    _hide_file_names(config)
    _guard_terminal(config, progress)
    if ticking:
        progress.start_ticker()


def own_terminal(config: pytest.Config) -> int | None:
    """A descriptor of our own for the terminal, one that reaches it while a case
    runs in this process and stays valid after pytest's capture ends.

    During a case pytest's fd capture points descriptor 2 at a temporary file, so a
    stall hint written there by the ticker thread would land in the case's captured
    output. The capture keeps a duplicate of the real stderr (and closes it when the
    capture stops, so it is duplicated again here, never written to directly);
    writing to a descriptor changes no capture state (suspending capture from another
    thread would race the main thread's own suspend and resume). Without fd capture
    (``-s``, ``--capture=sys``) descriptor 2 is the terminal already. None: this
    pytest keeps it elsewhere, so there is no in-process ticker.
    """
    capman = config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    err = getattr(capturing, "err", None)
    if err is None:
        source = 2 if config.getoption("capture", "fd") != "fd" else None
    else:
        saved = getattr(err, "targetfd_save", None)
        source = saved if isinstance(saved, int) else None
    if source is None:
        return None
    try:
        return os.dup(source)
    except OSError:
        return None


def fd_writer(fd: int) -> Callable[[str], None]:
    """Write text to `fd` whole (the terminal's encoding, nothing unencodable lost)."""
    encoding = getattr(sys.__stderr__, "encoding", None) or "utf-8"

    def write(text: str) -> None:
        write_all(fd, text.encode(encoding, "backslashreplace"))

    return write


__all__ = ["ProgressHooks", "fd_writer", "own_terminal", "watch_progress"]
