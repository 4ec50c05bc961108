"""The bench's arithmetic (bench/measure.py, bench/observe.py, bench/bench_workers.py):
medians and spread, bare calls per core, turn order, the journal follower's first
case and tail, the process watch, and the crossover fit. No run is started here."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))  # bench/ is not a package: its modules import by name

import bench_workers  # noqa: E402
import measure  # noqa: E402
import observe  # noqa: E402
import proc_watch  # noqa: E402


def test_spread_is_median_min_max_and_ignores_failed_measurements() -> None:
    """Median with its range; NaN (a failed measurement) is left out; none is NaN."""
    got = measure.spread([3.0, 1.0, float("nan"), 2.0, 10.0])
    assert (got.median, got.low, got.high, got.count) == (2.5, 1.0, 10.0, 4)
    assert got.text(1) == "2.5 (1.0-10.0)"
    assert measure.spread([4.0]).text(1) == "4.0"
    assert math.isnan(measure.spread([float("nan")]).median)


def test_bare_calls_are_shared_among_the_processes_that_ran_them() -> None:
    """A serial sum over min(processes, cores): two workers on two cores halve it,
    an in-process run (one process) keeps it, eight workers on two cores halve it."""
    assert measure.per_core(10.0, 2, 2) == 5.0
    assert measure.per_core(10.0, 1, 2) == 10.0
    assert measure.per_core(10.0, 8, 2) == 5.0
    try:
        measure.per_core(10.0, 0, 2)
    except ValueError:
        pass
    else:
        raise AssertionError("0 processes must be refused")


def test_measurements_run_in_turns_and_ratios_pair_by_round() -> None:
    """A B A B, never A A B B; a ratio divides round i by round i."""
    assert measure.turns(["a", "b"], 2) == ["a", "b", "a", "b"]
    order: list[str] = []
    got = measure.in_turns(
        {
            "a": lambda: order.append("a") or len(order),
            "b": lambda: order.append("b") or len(order),
        },
        3,
    )
    assert order == ["a", "b"] * 3
    assert got == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert measure.pair_ratios([2.0, 9.0], [1.0, 3.0]) == [2.0, 3.0]
    assert math.isnan(measure.pair_ratios([1.0], [0.0])[0])


def test_load_text_gives_the_range_seen() -> None:
    """The loads around a row, as one figure or a range."""
    assert measure.load_text([1.04, 1.01]) == "load 1.0"
    assert measure.load_text([0.5, 3.25, 1.0]) == "load 0.5-3.2"
    assert measure.load_text([float("nan")]) == "load ?"


def _line(kind: str, **fields: object) -> bytes:
    return json.dumps({"type": kind, **fields}).encode() + b"\n"


def test_journal_follower_dates_executed_cases_only(tmp_path: Path) -> None:
    """First and last executed case lines, as seen by the polls; not_run accounting
    and a line cut in two by a poll count once, when it is whole."""
    journal = tmp_path / "selections" / "x" / "k_journal.jsonl"
    journal.parent.mkdir(parents=True)
    meta = {"options": {"workers": {"count": 2, "why": "many cases"}}}
    follower = observe.JournalFollower(tmp_path, launched=100.0)
    journal.write_bytes(
        _line("run_start", metadata=meta) + _line("case", record={"status": "not_run"})
    )
    follower.poll(101.0)
    assert follower.cases == 0 and math.isnan(follower.first_s)
    passed = _line("case", record={"status": "passed"})
    with open(journal, "ab") as fh:
        fh.write(passed + passed[:10])
    follower.poll(103.5)
    with open(journal, "ab") as fh:
        fh.write(passed[10:] + _line("run_end"))
    follower.poll(107.0)
    assert follower.cases == 2
    assert (follower.first_s, follower.last_s) == (3.5, 7.0)
    assert observe.workers_of(follower.metadata) == (2, "many cases")


def test_journal_follower_skips_earlier_runs_and_reads_a_new_journal(
    tmp_path: Path,
) -> None:
    """Lines a kept results dir held before the launch are not this run's; a
    journal set aside and started afresh (a new file) is read from its start."""
    journal = tmp_path / "k_journal.jsonl"
    passed = _line("case", record={"status": "passed"})
    journal.write_bytes(passed * 3)
    follower = observe.JournalFollower(tmp_path, launched=0.0)
    follower.skip_existing()
    with open(journal, "ab") as fh:
        fh.write(passed)
    follower.poll(1.0)
    assert follower.cases == 1
    journal.rename(tmp_path / "k_journal.jsonl.prev")
    journal.write_bytes(passed)  # shorter than the old one's offset
    follower.poll(2.0)
    assert (follower.cases, follower.first_s, follower.last_s) == (2, 1.0, 2.0)


def test_journal_follower_survives_a_folder_vanishing_mid_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run removing its scratch folder while a poll walks the results dir costs
    that poll, never the follower (its thread would stop noting cases)."""

    def vanished(self: Path, pattern: str) -> list[Path]:
        raise FileNotFoundError(2, "No such file or directory", str(self))

    follower = observe.JournalFollower(tmp_path, launched=0.0)
    monkeypatch.setattr(Path, "rglob", vanished)
    follower.poll(1.0)
    assert follower.cases == 0


def test_workers_of_falls_back_to_the_pytest_command() -> None:
    """Older metadata without options.workers: the -n of the pytest command."""
    meta = {"options": {"pytest_command": "pytest --torchcts-manifest m.py -n 0 --x"}}
    assert observe.workers_of(meta) == (0, "-n in the pytest command")
    assert observe.workers_of({}) == (None, "not recorded")


def test_artifact_sizes_by_kind(tmp_path: Path) -> None:
    """Journal, history, latest, reports and the rest, each counted once."""
    (tmp_path / "k_history").mkdir()
    (tmp_path / "k_history" / "20260101T000000Z.json").write_bytes(b"h" * 7)
    (tmp_path / "k_journal.jsonl").write_bytes(b"j" * 5)
    (tmp_path / "k_latest.json").write_bytes(b"l" * 3)
    for name in ("k.md", "k.html", "k.junit.xml"):
        (tmp_path / name).write_bytes(b"r")
    (tmp_path / "k_runlog.txt").write_bytes(b"o" * 2)
    assert observe.artifact_sizes(tmp_path) == {
        "journal": 5,
        "history": 7,
        "latest": 3,
        "reports": 3,
        "other": 2,
    }


def test_crossover_of_two_fitted_lines() -> None:
    """wall = fixed + slope x cases per way; where they meet; parallel lines never."""
    serial = bench_workers.line_fit([(0.0, 5.0), (100.0, 6.0), (200.0, 7.0)])
    assert serial == (5.0, 0.01)
    workers = (10.0, 0.005)
    assert bench_workers.crossover(serial, workers) == 1000.0
    assert bench_workers.crossover(workers, serial) == math.inf


def _fake_process(
    proc: Path, pid: int, kids: list[int], ticks: tuple[int, int], maps: str
) -> None:
    task = proc / str(pid) / "task" / str(pid)
    task.mkdir(parents=True)
    (task / "children").write_text(" ".join(map(str, kids)) + (" " if kids else ""))
    fields = ["S", "1", *["0"] * 9, str(ticks[0]), str(ticks[1]), *["0"] * 8]
    (proc / str(pid) / "stat").write_text(f"{pid} (py thon) " + " ".join(fields))
    (proc / str(pid) / "maps").write_text(maps)


def test_the_process_watch_sums_the_tree_and_dates_each_torch_load(
    tmp_path: Path,
) -> None:
    """Every process under the root is sampled (a name with a space included); a
    process is counted from the first poll that sees libtorch in its maps, and an
    exited one keeps its last CPU sample; a process outside the tree is not seen."""
    ticks = proc_watch.TICKS
    torch_map = "7f00-7f01 r-xp 0 08:01 1 /venv/torch/lib/libtorch_cpu.so\n"
    _fake_process(tmp_path, 10, [11, 12], (ticks, 0), "")
    _fake_process(tmp_path, 11, [], (2 * ticks, ticks), torch_map)
    _fake_process(tmp_path, 12, [], (ticks // 2, 0), "/usr/lib/libc.so.6\n")
    _fake_process(tmp_path, 99, [], (50 * ticks, 0), torch_map)  # not a child
    watch = proc_watch.ProcessWatch(10, proc=tmp_path)
    watch.poll(1.0)
    assert watch.cpu_s() == pytest.approx(1 + 3 + 0.5)
    assert (watch.torch_by(0.5), watch.torch_by(1.0)) == (0, 1)
    (tmp_path / "12" / "maps").write_text(torch_map)
    watch.poll(2.0)
    assert (watch.torch_by(1.5), watch.torch_by(2.0)) == (1, 2)
    for name in ("stat", "maps"):
        (tmp_path / "11" / name).unlink()  # 11 has exited
    watch.poll(3.0)
    assert watch.cpu_s() == pytest.approx(4.5)
    assert watch.torch_by(3.0) == 2


def test_the_process_watch_of_this_process_sees_its_own_child() -> None:
    """On this machine's /proc: a child shows up under its parent with its CPU."""
    import subprocess

    if not (proc_watch.PROC / "self" / "stat").exists():
        pytest.skip("no /proc on this platform")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        watch = proc_watch.ProcessWatch(os.getpid())
        watch.poll(0.0)
        assert child.pid in watch.cpu
    finally:
        child.kill()
        child.wait()


def test_the_start_rows_give_first_case_wall_cpu_and_torch_interpreters() -> None:
    """One row each: time to first case, CPU by then, interpreters with torch
    by then (the median of the runs, their range shown)."""
    import run

    def seen(first: float, cpu: float, torch_count: int) -> observe.RunObservation:
        return observe.RunObservation(
            wall_s=20.0,
            cpu_s=30.0,
            exit_code=0,
            cases=10,
            first_case_s=first,
            first_case_cpu_s=cpu,
            torch_by_first_case=torch_count,
            tail_s=1.0,
            workers=2,
            workers_why="-n",
            loads=(1.0, 1.0),
            artifacts={},
        )

    rows = run.start_rows("a", "-n 2", [seen(8.0, 15.0, 3), seen(6.0, 13.0, 4)], [1.0])
    assert [(r.metric, r.value) for r in rows] == [
        ("-n 2: time to first case", 7.0),
        ("-n 2: CPU to first case", 14.0),
        ("-n 2: interpreters with torch by the first case", 3.5),
    ]
    assert rows[2].shown == "4 (3-4)"


def test_validation_rows_divide_the_bare_calls_and_the_bare_loop_per_core() -> None:
    """Both bare figures are shared among the run's processes (capped by the cores)
    and the wall is divided by each, pair by pair."""
    import bench_validation
    from bare import BareCalls

    def seen(wall: float, workers: int) -> observe.RunObservation:
        return observe.RunObservation(
            wall_s=wall, cpu_s=wall, exit_code=0, cases=100, first_case_s=2.0,
            first_case_cpu_s=2.0, torch_by_first_case=1, tail_s=1.0,
            workers=workers, workers_why="", loads=(1.0, 1.0), artifacts={},
        )  # fmt: skip

    bares = [BareCalls(2.0, 100, 0, 6.0), BareCalls(4.0, 100, 0, 12.0)]
    rows = bench_validation.validation_rows(
        "level 1", bares, [seen(12.0, 0), seen(12.0, 4)], [1.0], 2
    )
    got = {r.metric: r.value for r in rows}
    # one process: the serial sums; four workers on two cores: halves
    assert got["level 1: bare calls per core"] == 2.0  # median of 2.0 and 4.0 / 2
    assert got["level 1: bare loop per core"] == 6.0  # 6.0 and 12.0 / 2
    assert got["level 1: wall / bare per core"] == 6.0  # 12 / 2 both rounds
    assert got["level 1: wall / bare loop per core"] == 2.0  # 12 / 6 both rounds
