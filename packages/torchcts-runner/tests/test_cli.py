"""torchcts-run: exit codes a CI job can gate on, the report line, and an abnormal end
(a GIL-holding hang ended by faulthandler's _exit(1)) that is not success."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(
    tmp_path: Path, ops: list[str], *extra: str
) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "m.py"
    manifest.write_text(
        f'DEVICE = "cpu"\nOPS = {{"include": {ops!r}}}\nRESOURCE_LIMITS = {{"case_timeout_s": 1}}\n'
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
               "--torchcts-case-source", "fakecases", "--quiet", *extra]  # fmt: skip
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("workers", ["0", "2"])
def test_failures_exit_1_and_report_path_is_printed(
    tmp_path: Path, workers: str
) -> None:
    """A completed run with a failing case exits 1, says so, and points at the
    reports the plugin listed (each path once); --no-fail turns the same run into 0 (failures collected as data)."""
    done = _run(tmp_path, ["ok", "wrong"], "-n", workers)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("torchcts-run: run complete; 1 case(s) did not pass")
    assert "(1 failed)" in last and last.endswith("; reports listed above")
    (md,) = (tmp_path / "results").glob("*.md")  # listed once, by the plugin
    assert (done.stdout + done.stderr).count(f"results/{md.name}") == 1
    again = _run(tmp_path, ["ok", "wrong"], "-n", workers, "--no-fail")
    assert again.returncode == 0, again.stdout + again.stderr
    last = again.stdout.strip().splitlines()[-1]  # never "every executed case passed"
    assert "1 case(s) did not pass (1 failed), none with a status that fails" in last


def test_all_passed_exits_0_and_fail_on_narrows_the_policy(tmp_path: Path) -> None:
    """Every executed case passed: 0; --fail-on crashed ignores a plain failure."""
    assert _run(tmp_path, ["ok"], "-n", "0").returncode == 0
    done = _run(tmp_path, ["ok", "wrong"], "-n", "0", "--fail-on", "crashed")
    assert done.returncode == 0, done.stdout + done.stderr
    bad = _run(tmp_path, ["ok"], "-n", "0", "--fail-on", "wrongish")
    assert bad.returncode == 4 and "wrongish" in bad.stderr


def test_empty_selection_and_bad_manifest_fail(tmp_path: Path) -> None:
    """No cases collected is 5 and leaves no results; a missing manifest is a usage
    error (4) in one line."""
    empty = _run(tmp_path, ["ok"], "-n", "0", "-k", "nothing_matches")
    assert empty.returncode == 5
    assert not (tmp_path / "results").exists()
    missing = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "nope.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 4 and "nope.py does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("-k", "nothing_matches"), "(-k nothing_matches; the manifest's level 1)"),
        (("--shard", "1/2", "--level", "2"), "(--shard 1/2 --level 2)"),
    ],
)
def test_an_empty_selection_says_why_in_one_line(
    tmp_path: Path, extra: tuple[str, ...], named: str
) -> None:
    """A selection that matches no case (-k, or a shard with none of the cases)
    exits 5 as before, but no longer silently: one TorchCTS line names the options
    that selected nothing, and a full run's results are left exactly as they were."""
    assert _run(tmp_path, ["ok"], "-n", "0").returncode == 0
    results = tmp_path / "results"
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    empty = _run(tmp_path, ["ok"], "-n", "0", *extra)
    assert empty.returncode == 5, empty.stdout + empty.stderr
    (line,) = [
        line
        for line in (empty.stdout + empty.stderr).splitlines()
        if "the selection matched no case" in line
    ]
    assert line.startswith(f"TorchCTS: the selection matched no case {named}")
    assert line.endswith("nothing ran and no result was written")
    after = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    assert after == before


def test_a_selection_xdist_workers_deselect_whole_says_so(tmp_path: Path) -> None:
    """On xdist workers -k is applied where the cases are collected: the run ends
    with 5, records its empty run in its own selection folder (the line names it)
    and leaves the full run's files alone."""
    assert _run(tmp_path, ["ok"], "-n", "0").returncode == 0
    results = tmp_path / "results"
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    empty = _run(tmp_path, ["ok"], "-n", "2", "-k", "nothing_matches")
    assert empty.returncode == 5, empty.stdout + empty.stderr
    assert (
        "TorchCTS: the selection matched no case (-k nothing_matches; the manifest's "
        "level 1): none of its 1 planned case(s) was left to run; nothing ran; "
        "results/selections/k-nothing_matches records the empty run"
    ) in empty.stdout
    assert all(results.joinpath(p).read_bytes() == b for p, b in before.items())


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize(
    "extra, folder",
    [
        (
            ("--deselect", "torchcts::fake/wrong/forward/float32/0"),
            "selections/deselect-fake.wrong.forward.float32.0",
        ),
        (("--shard", "1/2"), "selections/shard-1of2"),
    ],
)
def test_a_part_of_the_manifest_never_replaces_the_full_run(
    tmp_path: Path, workers: str, extra: tuple[str, ...], folder: str
) -> None:
    """--deselect and --shard run part of the manifest, as -k does: their results go
    to a selection folder of their own, and the full run's files stay as they were
    (before, both wrote results/ itself: the part replaced the full run's latest
    result, history reference and reports)."""
    from torchcts_schema import load_result

    ops = ["ok", "wrong", "p1", "p2", "p3", "p4", "p5", "p6"]
    assert _run(tmp_path, ops, "-n", "0").returncode == 1
    results = tmp_path / "results"
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    part = _run(tmp_path, ops, "-n", workers, *extra)
    assert part.returncode in (0, 1), part.stdout + part.stderr
    after = {p: p.read_bytes() for p in before if p.is_file()}
    assert after == before
    executed = [
        r for r in load_result(results / folder).results if r.status.value != "not_run"
    ]
    assert 0 < len(executed) < len(ops)


@pytest.mark.parametrize(
    "args, named",
    [
        (["--manifest", "m.py", "--level", "x"], "argument --level: invalid int"),
        (["--manifest", "m.py", "--isolate", "some"], "argument --isolate: invalid"),
        (["--level", "2"], "one of the arguments --manifest --best-device"),
        (["--manifest"], "argument --manifest: expected one argument"),
    ],
)
def test_a_malformed_option_is_pytests_usage_error_in_one_line(
    tmp_path: Path, args: list[str], named: str
) -> None:
    """An option of torchcts-run's own that is malformed exits 4, pytest's usage
    error (argparse's 2 is pytest's "interrupted"), with one line, not the usage."""
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"torchcts-run: error: {named}"), line
    assert line.endswith("(--help lists the options)") and not done.stdout


def test_an_unknown_option_is_one_line_with_the_closest(tmp_path: Path) -> None:
    """A typo'd option (--levle) was pytest's usage text with absolute inifile and
    rootdir paths; now one line names it and the closest known option, exit 4,
    nothing written; pytest's own options still pass through."""
    done = _run(tmp_path, ["ok"], "-n", "0", "--levle", "4", "--jsno")
    assert done.returncode == 4, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "unknown option --levle (did you mean --level?)" in line
    assert "also unknown: --jsno" in line
    assert str(tmp_path) not in done.stdout + done.stderr
    assert not (tmp_path / "results").exists()
    passed = _run(tmp_path, ["ok"], "-n", "0", "-x", "--maxfail", "3",
                  "-p", "no:foo", "-k", "ok", "--maxfail=3")  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_a_manifest_that_is_a_directory_is_called_one(tmp_path: Path) -> None:
    """--manifest naming a directory says so (was 'does not exist'), in one line."""
    (tmp_path / "manifests").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "manifests"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "manifest manifests is a directory; name the manifest file" in done.stderr
    assert "does not exist" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_manifest_past_the_size_limit_is_a_usage_error(tmp_path: Path) -> None:
    """A valid manifest of more than 1 MiB is refused at the start (4), in one line
    naming the file and the limit, before anything is written (it used to run and
    only the archive refused it)."""
    (tmp_path / "big.py").write_text('DEVICE = "cpu"\n' + "# note\n" * 160_000)
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "big.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "torchcts-run: error: big.py: manifest is larger than 1 MiB (1048576 bytes), "
        "the most a manifest may hold"
    )
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "limit",
    [
        "'case_timeout_s': 1e10",
        "'hang_heartbeat_s': 1e400",
        "'memory_mb': 10" + "0" * 29,
    ],
)
def test_a_limit_past_its_range_is_a_usage_error(tmp_path: Path, limit: str) -> None:
    """A RESOURCE_LIMITS value past its range stops the run before pytest, in one
    line (4), instead of a setitimer traceback (3) or an OverflowError in every
    case recorded as the backend's error."""
    (tmp_path / "m.py").write_text(f'DEVICE = "cpu"\nRESOURCE_LIMITS = {{{limit}}}\n')
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "is out of range" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_a_case_timeout_option_past_the_range_is_a_usage_error(tmp_path: Path) -> None:
    """--torchcts-case-timeout has the manifest's range: 1e10 is pytest's usage
    error (4), not a setitimer OverflowError once the first case starts."""
    done = _run(tmp_path, ["ok"], "-n", "0", "--torchcts-case-timeout", "1e10")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--torchcts-case-timeout 10000000000.0: must be above 0" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_help_lists_own_options_and_exit_codes() -> None:
    """--help shows the run's own options and every exit status; --version works."""
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--help"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    for word in ("--level", "--dtype", "--op", "--suite", "--shard", "--resume",
                 "--isolate", "--validation", "--fail-on", "130", "143"):  # fmt: skip
        assert word in done.stdout, word
    version = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--version"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert version.returncode == 0 and version.stdout.strip()


def test_abnormal_end_is_not_success(tmp_path: Path) -> None:
    """A process ended by the GIL-hang backstop (exit 1) is reported as abnormal (3)."""
    done = _run(tmp_path, ["ok", "gilhang"], "-n", "0")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--resume" in done.stdout


def test_workers_left_to_the_work_are_recorded_and_a_crash_is_continued(
    tmp_path: Path,
) -> None:
    """No -n: a small selection runs in process (the header line and the metadata
    say so and why); a segfault that ends that process is continued at once with
    --resume on xdist workers, so the run completes with the case crashed and the
    others run."""
    from torchcts_schema import Status, load_result

    done = _run(tmp_path, ["ok", "segv", "wrong"])
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "TorchCTS: in process (-n 0): 3 planned case(s)" in out
    assert "run of 3 planned case(s) ended abnormally (SIGSEGV); continuing" in out
    assert "--resume on 2 xdist worker(s) (-n 2)" in out
    # ok passed and segv died in the first session: pytest's line counts wrong only
    assert "resumed: 2 case(s) from earlier session(s) are counted above" in out
    assert re.search(r"^=+ 1 failed in [\d.]+s =+$", done.stdout, re.MULTILINE), out
    artifact = load_result(tmp_path / "results")
    assert artifact.metadata.completed_normally
    statuses = {r.op: r.status for r in artifact.results}
    assert statuses == {
        "ok": Status.PASSED,
        "segv": Status.CRASHED,
        "wrong": Status.FAILED,
    }
    workers = artifact.metadata.options["workers"]  # the continuation's
    assert isinstance(workers, dict)
    assert (workers["count"], workers["chosen"]) == (2, "given")
    assert artifact.metadata.resumes == 1


def test_an_explicit_n_0_is_not_continued(tmp_path: Path) -> None:
    """-n 0 given: the crash ends the run abnormally (3), as it always did."""
    done = _run(tmp_path, ["ok", "segv", "wrong"], "-n", "0")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "continuing with --resume" not in done.stdout


def test_backend_that_cannot_be_imported_exits_6(tmp_path: Path) -> None:
    """A run whose backend import fails is never a success: exit 6, saying why,
    after its first case (every other would be the same configuration error)."""
    manifest = tmp_path / "m.py"
    manifest.write_text(
        'DEVICE = "cpu"\nBACKEND_IMPORT = "no_such_backend_module"\n'
        'OPS = {"include": ["ok", "wrong", "boom"]}\n'
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
         "--torchcts-case-source", "fakecases", "--quiet", "-n", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 6, done.stdout + done.stderr
    assert "could not be imported" in done.stdout.strip().splitlines()[-1]
    assert "run stopped: configuration: backend import 'no_such_backend_module'" in (
        done.stdout
    )
    (journal,) = tmp_path.glob("results/*_journal.jsonl")
    assert journal.read_text().count('{"type":"case"') == 1
    # the hint sends a fixed manifest to a fresh run, which works: --resume refuses
    assert "after a fix to the manifest, start the run afresh" in done.stdout
    manifest.write_text('DEVICE = "cpu"\nOPS = {"include": ["ok", "wrong", "boom"]}\n')
    command = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
               "--torchcts-case-source", "fakecases", "--quiet", "-n", "0"]  # fmt: skip
    resumed = subprocess.run(
        [*command, "--resume"], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 4, resumed.stdout + resumed.stderr
    fresh = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert fresh.returncode == 1, fresh.stdout + fresh.stderr  # wrong and boom


def test_recorded_command_is_the_users_and_reruns_name_the_manifest(
    tmp_path: Path,
) -> None:
    """Started by `make run`, the run records that command, keeps the pytest line
    beside it, and the report's rerun commands still name the run's manifest."""
    import json

    from torchcts_schema import load_result

    env_command = "make run LEVEL=2"
    os.environ["TORCHCTS_USER_COMMAND"] = env_command
    try:
        done = _run(tmp_path, ["ok", "wrong"], "-n", "0")
    finally:
        del os.environ["TORCHCTS_USER_COMMAND"]
    assert done.returncode == 1, done.stdout + done.stderr
    meta = load_result(tmp_path / "results").metadata
    assert meta.command == env_command
    assert str(meta.options["pytest_command"]).split()[0] == "pytest"
    assert meta.options["manifest"] == "m.py"
    (report,) = (tmp_path / "results").glob("*.md")
    assert "--manifest 'm.py'" in report.read_text() or "--manifest m.py" in (
        report.read_text()
    ), json.dumps(meta.options)


def test_resume_command_is_the_users_own_plus_resume() -> None:
    """An interrupted run prints a command that works as printed: the user's own,
    with --resume (through ARGS for make)."""
    from torchcts_runner.run_judgement import resume_command

    assert resume_command("make run LEVEL=2") == "make run LEVEL=2 ARGS=--resume"
    assert resume_command("make run ARGS='--op add'") == (
        "make run 'ARGS=--op add --resume'"
    )
    assert resume_command("torchcts-run --manifest m.py") == (
        "torchcts-run --manifest m.py --resume"
    )
    assert resume_command("torchcts-run --resume") == "torchcts-run --resume"


def test_printed_command_keeps_a_route_to_paths_outside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command a crashed or interrupted run prints must work pasted where the run
    started: a manifest outside the working directory is reached with ``..`` (not cut
    to its bare name), and ``--opt=/abs`` is never kept absolute."""
    from torchcts_runner.cli import _user_command

    (tmp_path / "repo").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    command = _user_command(
        ["--manifest", str(tmp_path / "elsewhere" / "m.py"),
         f"--results={tmp_path / 'elsewhere' / 'r'}", "torchcts::opinfo/add/forward"]
    )  # fmt: skip
    assert command.split()[-4:] == [
        "--manifest", "../elsewhere/m.py", "--results=../elsewhere/r",
        "torchcts::opinfo/add/forward",
    ]  # fmt: skip
    assert str(tmp_path) not in command


def test_an_argument_that_is_not_utf8_is_one_usage_line(tmp_path: Path) -> None:
    """A results path (or node id) whose bytes are not UTF-8 reaches Python with
    surrogates that no artifact, archive or xdist channel can carry: refused before
    anything runs (it was 66 INTERNALERROR lines on workers, a traceback in
    archiving), with nothing created."""
    manifest = tmp_path / "m.py"
    manifest.write_text('DEVICE = "cpu"\nOPS = {"include": ["ok"]}\n')
    bad = os.fsencode(tmp_path) + b"/res\xffults"
    command = [os.fsencode(sys.executable), b"-m", b"torchcts_runner.cli",
               b"--manifest", b"m.py", b"--results", bad]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines() == [
        f"torchcts-run: error: {tmp_path}/res\\udcffults is not valid UTF-8: use a "
        "path or id that is"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]
