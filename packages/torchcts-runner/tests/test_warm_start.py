"""The start-up imports a process begins in a thread: which, and that they decide
nothing (a failure is left to the main thread's own import)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
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
