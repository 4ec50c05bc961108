"""The heap settling a run does at start-up and after its last case."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from runner_helpers import run_args, use_fake_source, write_manifest
from torchcts_runner.heap import (
    end_start_up,
    freeze_for_exit,
    freeze_start_up,
    pause_start_up,
)


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the test process's collector as it was."""
    enabled = gc.isenabled()
    callbacks = list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_start_up_freezes_what_is_alive_and_keeps_collecting(collector: None) -> None:
    """Objects alive at start-up leave every generation; later ones are collected."""
    gc.unfreeze()
    kept = [[] for _ in range(1000)]
    freeze_start_up()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.isenabled()
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1  # made after the freeze: still collected


def test_a_full_collection_after_start_up_freezes_what_it_found_alive(
    collector: None,
) -> None:
    """After start-up, a full collection frees every unreachable cycle, then what
    survived leaves the generations a later full collection scans; what is made
    after it is scanned (and collected) as before."""
    gc.unfreeze()
    freeze_start_up()
    frozen = gc.get_freeze_count()
    kept = [[] for _ in range(1000)]
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1  # the cycle: collected, never frozen
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert not any(o is kept for o in gc.get_objects())  # no longer scanned
    later: list[object] = []
    later.append(later)
    del later
    assert gc.collect() >= 1
    freeze_for_exit()
    assert len([c for c in gc.callbacks if "freeze" in getattr(c, "__name__", "")]) == 0


def test_start_up_installs_the_freeze_once(collector: None) -> None:
    """Two start-ups in one process (a worker that is also asked again) add one."""
    before = len(gc.callbacks)
    freeze_start_up()
    freeze_start_up()
    assert len(gc.callbacks) == before + 1


def test_exit_freezes_and_stops_collecting(collector: None) -> None:
    """After the last case nothing is scanned again: frozen, collector off."""
    gc.unfreeze()
    freeze_for_exit()
    assert gc.get_freeze_count() > 0
    assert not gc.isenabled()


def test_start_up_pauses_collection_until_it_ends(collector: None) -> None:
    """Paused, then frozen and collecting again once; a collector that was off
    before the pause stays off."""
    gc.enable()
    gc.unfreeze()
    pause_start_up()
    assert not gc.isenabled()
    kept = [[] for _ in range(1000)]
    end_start_up()
    assert gc.isenabled() and gc.get_freeze_count() >= len(kept)
    gc.disable()
    end_start_up()  # already ended: changes nothing
    assert not gc.isenabled()
    pause_start_up()
    end_start_up()
    assert not gc.isenabled()


_GC_SPY = """
import gc, pathlib

def _note(text):
    with pathlib.Path("gc.txt").open("a") as fh:
        fh.write(text + "\\n")

def _warm(specs):  # the case source's one-time warm-up, after the start-up imports
    _note(f"warm {gc.isenabled()}")

import fakecases
fakecases.warm_up = _warm

def pytest_collection_finish(session):
    _note(f"collected {gc.isenabled()}")

def pytest_runtest_logfinish(nodeid):
    _note(f"ran {gc.isenabled()}")
"""


def test_a_run_collects_nothing_until_its_first_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start-up imports, collection and the case source's warm-up run paused;
    every case after it with the collector on."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok", "wrong"])
    pytester.makeconftest(_GC_SPY)
    result = pytester.runpytest_subprocess(*run_args())
    assert result.ret == 1, result.stdout.str()
    lines = (pytester.path / "gc.txt").read_text().splitlines()
    assert lines == ["collected False", "warm False", "ran True", "ran True"]


def test_a_session_that_ends_before_any_case_resumes_collection(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    """A run inside this process (pytester) that stops before its first case does
    not leave this process's collector paused."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok"])
    gc.enable()
    result = pytester.runpytest_inprocess(*run_args("not-a-node-id"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert gc.isenabled()


_STATS_SPY = """
import pathlib

def pytest_terminal_summary(terminalreporter):
    kept = {k: len(v) for k, v in terminalreporter.stats.items() if v}
    pathlib.Path("stats.txt").write_text(repr(sorted(kept.items())))
"""


def test_the_terminal_keeps_no_passing_setup_or_teardown_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's reporter would keep two reports a case under the empty category,
    which nothing reads; the cases' own reports are kept and counted as before."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok", "ok", "wrong"])
    pytester.makeconftest(_STATS_SPY)
    result = pytester.runpytest_subprocess(*run_args())
    assert result.ret == 1, result.stdout.str()
    kept = (pytester.path / "stats.txt").read_text()
    assert kept == repr([("failed", 1), ("passed", 2)])
    result.stdout.fnmatch_lines(["*1 failed, 2 passed*"])
