"""The progress line: the stall hint (fake clock), no collisions with foreign text,
visible end phases, and the report paths listed once at the end of a run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from runner_helpers import run_args, subset_results, use_fake_source, write_manifest
from torchcts_runner.progress import Progress
from torchcts_runner.run_end import shown
from torchcts_runner.run_summary import report_words
from torchcts_schema import Status


def _progress(live: bool) -> tuple[Progress, list[float], list[str]]:
    now = [0.0]
    out: list[str] = []
    progress = Progress(
        3,
        out.append,
        live=live,
        live_every_s=0,
        quiet_every_s=30,
        stall_after_s=3,
        clock=lambda: now[0],
    )
    return progress, now, out


def test_stall_hint_names_the_oldest_running_case_and_its_age() -> None:
    """After 3 s without a finished case the line names the oldest running case."""
    progress, now, out = _progress(live=True)
    progress.started("fake/a/forward/float32/0")
    now[0] = 1.0
    progress.started("fake/b/forward/float32/0")
    now[0] = 2.9
    progress.tick()
    assert out == []  # under the threshold: nothing to say yet
    now[0] = 9.0
    progress.tick()
    assert out[-1] == "\r\x1b[2K[0/3] | running fake/a/forward/float32/0 for 9s"


def test_stall_hint_disappears_when_a_case_finishes() -> None:
    """A finished case redraws the ordinary line and the hint moves to the next one."""
    progress, now, out = _progress(live=True)
    progress.started("fake/a/forward/float32/0")
    progress.started("fake/b/forward/float32/0")
    now[0] = 4.0
    progress.tick()
    progress.add(Status.PASSED, "fake/a/forward/float32/0")
    assert out[-1] == "\r\x1b[2K[1/3] pass 1 | 0.2/s | ~0m08s left"
    now[0] = 8.0
    progress.tick()
    assert out[-1].endswith("| running fake/b/forward/float32/0 for 8s")


def test_quiet_stall_hint_is_printed_once_per_case_then_every_quiet_period() -> None:
    """Quiet mode prints one full line per stalled case, not one per tick."""
    progress, now, out = _progress(live=False)
    progress.started("fake/a/forward/float32/0")
    for second in (4.0, 5.0, 6.0):
        now[0] = second
        progress.tick()
    assert out == ["[0/3] | running fake/a/forward/float32/0 for 4s\n"]
    now[0] = 40.0
    progress.tick()
    assert out[-1] == "[0/3] | running fake/a/forward/float32/0 for 40s\n"


def test_foreign_text_and_own_text_start_on_a_fresh_line() -> None:
    """The live line ends before others write; text they leave open is ended too."""
    progress, _, out = _progress(live=True)
    progress.add(Status.PASSED)
    progress.foreign(lambda: out.append("[gw0] node down"), ends_line=False)
    progress.say("TorchCTS: rendering reports...\n")
    assert out[1:] == ["\n", "[gw0] node down", "\nTorchCTS: rendering reports...\n"]


def test_nothing_is_drawn_after_close() -> None:
    """close ends the live line once; a late tick or record writes nothing."""
    progress, now, out = _progress(live=True)
    progress.started("fake/a/forward/float32/0")
    progress.add(Status.PASSED)
    progress.close()
    now[0] = 10.0
    progress.tick()
    progress.add(Status.PASSED)
    assert out[-1] == "\n" and len(out) == 2


def test_report_paths_are_shown_relative_when_inside_the_cwd(tmp_path: Path) -> None:
    """Inside the directory: relative POSIX path; outside: the path as it is."""
    assert shown(tmp_path / "results" / "k.md", tmp_path) == "results/k.md"
    outside = Path("/elsewhere/k.md")
    assert shown(outside, tmp_path) == "/elsewhere/k.md"


def test_final_line_points_at_the_listed_reports_or_names_the_report() -> None:
    """torchcts-run names the .md only when the plugin did not list the reports."""
    assert report_words({"report": "r.md", "reports": ["r.md"]}) == (
        "reports listed above"
    )
    assert report_words({"report": "r.md", "reports": []}) == "report: r.md"
    # a session that died before writing one (it printed "report: None")
    assert report_words({"ended": False}) == "no report was written"


@pytest.fixture
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


@pytest.mark.usefixtures("_fake")
@pytest.mark.parametrize("workers", [1, 0])
def test_quiet_run_shows_the_stall_hint_for_a_long_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A case running past the stall threshold is named in the quiet output while it
    runs: with xdist (the ticker runs while the worker is busy) and without it (a
    rerun of a few cases: the ticker writes past pytest's capture to the real
    stderr, not into the case's captured output)."""
    monkeypatch.setenv("FAKE_SLEEP_S", "6")
    write_manifest(pytester, ["sleepy"])
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert re.search(
        r"^\[0/1\] \| running fake/sleepy/forward/\S+ for \d+s$",
        result.stderr.str(),
        re.MULTILINE,
    ), result.stderr.str()


@pytest.mark.usefixtures("_fake")
def test_end_lists_phases_after_the_last_case_and_each_report_path_once(
    pytester: pytest.Pytester,
) -> None:
    """After the last case: phase lines, then one line with .md, .html, .junit.xml."""
    write_manifest(pytester, ["ok", "wrong"])
    result = pytester.runpytest_subprocess(*run_args("--op", "ok", "--op", "wrong"))
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    err, out = result.stderr.str(), result.stdout.str()
    last_case = err.rindex("[2/2]")
    assert err.index("TorchCTS: writing history...", last_case) < err.index(
        "TorchCTS: rendering reports..."
    )
    folder = subset_results(pytester.path / "results")
    key = next(folder.glob("*.md")).name.removesuffix(".md")
    paths = [
        (folder / f"{key}{suffix}").relative_to(pytester.path).as_posix()
        for suffix in (".md", ".html", ".junit.xml")
    ]
    assert f"reports: {', '.join(paths)} (" in out
    for path in paths:
        assert (out + err).count(path) == 1, path


@pytest.mark.usefixtures("_fake")
@pytest.mark.parametrize("workers", [0, 1])
def test_no_line_starts_with_the_cases_file_name(
    pytester: pytest.Pytester, workers: int
) -> None:
    """pytest's file name before its letters is ``torchcts`` for every case, and
    progress replaces the letters: in process it stood alone on an unfinished line
    (the line a case that kills the process leaves behind). Neither way shows it."""
    write_manifest(pytester, ["ok", "wrong"])
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    out = result.stdout.str() + result.stderr.str()
    assert "[100%]" in out  # pytest's own progress still ends the case lines
    assert not re.search(r"^torchcts\b(?!::)", out, re.MULTILINE), out
