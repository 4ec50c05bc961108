"""torchcts-run --json: the summary object, built from the plugin's status file."""

from __future__ import annotations

import json
from pathlib import Path

from torchcts_runner.run_summary import relative, run_summary, summary_text


def test_paths_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    """Artifact paths come out relative to where the command ran, in POSIX form."""
    status = {
        "run_key": "simdev_x",
        "complete": True,
        "counts": {"passed": 2, "failed": 1},
        "results": str(tmp_path / "results"),
        "report": str(tmp_path / "results" / "simdev_x.md"),
        "history": None,
    }
    summary = run_summary(1, status, cwd=tmp_path, exit_meaning="some case failed")
    assert summary["results"] == "results"
    assert summary["report"] == "results/simdev_x.md"
    assert summary["history"] is None
    assert summary["exit_code"] == 1 and summary["counts"] == {"passed": 2, "failed": 1}
    assert summary["complete"] is True and summary["run_key"] == "simdev_x"
    assert summary["passed_via_cpu_fallback"] == 0  # an older status file lacks it


def test_passes_through_a_cpu_fallback_are_counted_apart(tmp_path: Path) -> None:
    """The status file's count of passes through the CPU fallback is carried; a
    damaged one reads as 0, never as text."""
    status = {"counts": {"passed": 3}, "passed_via_cpu_fallback": 2}
    summary = run_summary(0, status, cwd=tmp_path, exit_meaning="ok")
    assert summary["passed_via_cpu_fallback"] == 2
    status["passed_via_cpu_fallback"] = "2"
    assert (
        run_summary(0, status, cwd=tmp_path, exit_meaning="ok")[
            "passed_via_cpu_fallback"
        ]
        == 0
    )


def test_no_status_file_still_gives_an_object(tmp_path: Path) -> None:
    """A run that never reached its session end still says its exit code and error."""
    summary = run_summary(4, None, cwd=tmp_path, exit_meaning="usage", error="bad")
    assert summary["complete"] is False and summary["counts"] == {}
    assert summary["error"] == "bad" and summary["report"] is None
    assert json.loads(summary_text(summary)) == summary


def test_relative_outside_the_working_directory(tmp_path: Path) -> None:
    """A path outside the working directory is relative too (with ..), never absolute."""
    assert relative(str(tmp_path / "a" / "b"), tmp_path / "c") == "../a/b"
    assert relative("results/x.md", tmp_path) == "results/x.md"
    assert relative("", tmp_path) is None
