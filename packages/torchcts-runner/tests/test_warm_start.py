"""The start-up imports a process begins in a thread: which, and that they decide
nothing (a failure is left to the main thread's own import)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from torchcts_runner.heap import end_start_up
from torchcts_runner.warm_start import WarmStart, stages_for

SOURCE = """
import threading
CALLS = []
Selection = select_cases = get_case = prepare = object()
def import_case_tables():
    CALLS.append(threading.current_thread().name)
"""


@pytest.mark.parametrize(
    ("worker", "workers", "names_cases", "expected"),
    [
        (True, 2, False, (True, True)),  # an xdist worker executes
        (False, 0, False, (True, True)),  # -n 0: this process executes
        (False, None, False, (True, True)),  # no xdist at all
        (False, 0, True, (True, False)),  # node ids may all replay saved inputs
        (False, "auto", False, (False, False)),  # nothing until the plan says here
        (False, "auto", True, (True, False)),  # node ids: nearly always here
        (False, 2, False, (False, False)),  # an xdist controller executes nothing
    ],
)
def test_stages_follow_where_the_cases_run(
    worker: bool, workers: object, names_cases: bool, expected: tuple[bool, bool]
) -> None:
    """Imports begin where cases run (or may); the tables only where they will."""
    assert (
        stages_for(worker=worker, workers=workers, names_cases=names_cases) == expected
    )


def test_the_tables_import_in_the_thread_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case source's import_case_tables runs once, in the warm-start thread."""
    (tmp_path / "warmfake.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    warm = WarmStart("warmfake")
    warm.start()
    warm.add_case_tables()
    warm.add_case_tables()
    warm.wait()
    assert sys.modules["warmfake"].CALLS == ["torchcts-warm-start"]


def test_a_failing_import_is_left_to_the_main_thread() -> None:
    """A case source that cannot be imported raises nothing in the thread or wait."""
    warm = WarmStart("no_such_case_source_module")
    warm.start()
    warm.add_case_tables()
    warm.wait()
    assert "no_such_case_source_module" not in sys.modules


class _Config:
    """What `plugin._warm_start` reads of a pytest config."""

    def __init__(self, isolate: str, numprocesses: object) -> None:
        self.stash = pytest.Stash()
        self.args: list[str] = []
        self.option = SimpleNamespace(
            collectonly=False, help=False, numprocesses=numprocesses
        )
        self._options = {
            "torchcts_manifest": "m.py",
            "torchcts_isolate": isolate,
            "torchcts_case_source": "no_such_case_source_module",
        }

    def getoption(self, name: str, default: object = None) -> object:
        return self._options.get(name, default)


@pytest.fixture
def collector_kept() -> Iterator[None]:
    """A warm start pauses collection until the first case (`heap`); a test that has
    none ends the pause itself, or every later test of its process runs without."""
    enabled = gc.isenabled()
    yield
    end_start_up()
    gc.unfreeze()
    if not enabled:
        gc.disable()


@pytest.mark.usefixtures("collector_kept")
def test_with_every_case_isolated_this_process_imports_nothing() -> None:
    """``--isolate all`` runs every case in the warm pool's child: the process that
    hands them over starts no import thread (it never imports torch); ``-n 0``
    without it does."""
    from torchcts_runner import plugin

    assert plugin._warm_start(_Config("all", 0)) is None  # type: ignore[arg-type]
    warm = plugin._warm_start(_Config("adaptive", 0))  # type: ignore[arg-type]
    assert warm is not None
    warm.wait()
    assert not gc.isenabled()  # paused until a first case that never comes
