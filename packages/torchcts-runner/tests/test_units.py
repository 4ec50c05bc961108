"""The runner's pure pieces: classification, runlog ring, shards, progress, deadlines,
the CLI's pytest arguments."""

from __future__ import annotations

import threading
import time
import unittest
from pathlib import Path

import pytest
from torchcts_runner.classify import (
    classify_device_exception,
    classify_harness_exception,
    classify_timeout,
    classify_verdict,
)
from torchcts_runner.cli import build_pytest_args
from torchcts_runner.crash_evidence import read_evidence, timeout_marker_path
from torchcts_runner.progress import Progress
from torchcts_runner.runlog import SLOTS, WIDTH, RunLog, read_runlog
from torchcts_runner.selection import SelectionError, in_shard, parse_shard
from torchcts_runner.timeouts import CaseTimeout, case_deadline
from torchcts_schema import CrashKind, Status

PATTERNS = (r"not implemented", r"not supported")


def test_unsupported_needs_claim_cpu_success_and_signal() -> None:
    """unsupported only for a claimed path, CPU ok, and NotImplementedError/pattern."""
    exc = NotImplementedError("x")
    assert (
        classify_device_exception(exc, claimed=True, cpu_ok=True, patterns=()).status
        is Status.UNSUPPORTED
    )
    assert (
        classify_device_exception(exc, claimed=False, cpu_ok=True, patterns=()).status
        is Status.ERROR
    )
    assert (
        classify_device_exception(exc, claimed=True, cpu_ok=False, patterns=()).status
        is Status.ERROR
    )
    msg = RuntimeError("op is not implemented for 'simdev'")
    assert (
        classify_device_exception(
            msg, claimed=True, cpu_ok=True, patterns=PATTERNS
        ).status
        is Status.UNSUPPORTED
    )
    other = RuntimeError("shape mismatch")
    assert (
        classify_device_exception(
            other, claimed=True, cpu_ok=True, patterns=PATTERNS
        ).status
        is Status.ERROR
    )


def test_runtime_skip_and_harness_problems() -> None:
    """A SkipTest is skipped; a harness exception is error and says it is not the backend."""
    skip = unittest.SkipTest("needs 2 devices")
    assert (
        classify_device_exception(skip, claimed=True, cpu_ok=True, patterns=()).status
        is Status.SKIPPED
    )
    harness = classify_harness_exception(ValueError("bad sample"), "preparing inputs")
    assert harness.status is Status.ERROR and "not a backend result" in (
        harness.detail or ""
    )


def test_verdict_and_timeout() -> None:
    """A wrong verdict is failed with its mismatch; a timeout is crashed/timeout."""
    assert classify_verdict(True, None).status is Status.PASSED
    failed = classify_verdict(False, "max abs diff 0.5")
    assert failed.status is Status.FAILED and failed.mismatch == "max abs diff 0.5"
    timeout = classify_timeout(3.0, where="x")
    assert timeout.status is Status.CRASHED and timeout.crash is not None
    assert timeout.crash.kind is CrashKind.TIMEOUT


def test_runlog_keeps_latest_32_in_a_fixed_size_file(tmp_path: Path) -> None:
    """The ring never grows and holds the latest 32 starts in order."""
    path = tmp_path / "k_runlog.txt"
    log = RunLog(path)
    for i in range(50):
        log.start(f"torchcts::s/op{i}/forward/float32/0", "gw0")
        assert path.stat().st_size == SLOTS * WIDTH
    entries = read_runlog(path)
    assert [e.seq for e in entries] == list(range(19, 51))
    assert entries[-1].node_id == "torchcts::s/op49/forward/float32/0"
    again = RunLog(path)  # a second writer (another worker) continues the sequence
    assert again.start("torchcts::x/y/z/-/-", "gw1").seq == 51


def test_runlog_writers_taking_turns_number_every_start_once(tmp_path: Path) -> None:
    """Two writers (two workers) in irregular turns, one of them for more than a whole
    ring in a row: every start gets the next number, and the ring the latest 32."""
    path = tmp_path / "k_runlog.txt"
    writers = [RunLog(path), RunLog(path)]
    turns = [0] * 3 + [1] + [0] + [1] * 40 + [0] * 2 + [1, 0] * 5 + [0] * 33 + [1]
    seqs = [
        writers[w].start(f"torchcts::s/op{i}/forward/float32/0", f"gw{w}").seq
        for i, w in enumerate(turns)
    ]
    assert seqs == list(range(1, len(turns) + 1))
    entries = read_runlog(path)
    assert [e.seq for e in entries] == seqs[-SLOTS:]
    assert [e.worker for e in entries] == [f"gw{w}" for w in turns[-SLOTS:]]


def test_shards_partition_every_case_once() -> None:
    """Shards are a deterministic partition; bad shard text is one clear error."""
    ids = [f"opinfo/op{i}/forward/float32/{i % 3}" for i in range(300)]
    owners = [[k for k in range(1, 4) if in_shard(c, (k, 3))] for c in ids]
    assert all(len(o) == 1 for o in owners)
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(SelectionError):
            parse_shard(bad)


def test_progress_line_counts_rate_and_time_left() -> None:
    """The line shows counts per status, rate and time left; quiet mode prints lines."""
    now = [0.0]
    out: list[str] = []
    progress = Progress(
        4, out.append, live=False, quiet_every_s=0, clock=lambda: now[0]
    )
    now[0] = 2.0
    progress.add(Status.PASSED)
    progress.add(Status.FAILED)
    assert out[-1].startswith("[2/4] pass 1 fail 1 | 1.0/s | ~0m02s left")


def test_case_deadline_interrupts_python_and_fires_watchdog() -> None:
    """Stage one raises CaseTimeout in Python code; a blocked case fires stage two."""
    with pytest.raises(CaseTimeout), case_deadline(0.2, lambda: None):
        time.sleep(5)
    fired = threading.Event()
    from torchcts_runner import timeouts

    exits: list[int] = []
    original = timeouts.os._exit
    timeouts.os._exit = exits.append  # type: ignore[assignment]
    try:
        with pytest.raises(CaseTimeout), case_deadline(0.1, fired.set):
            # the signal handler only runs between bytecodes; block it like native code
            import signal

            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            try:
                assert fired.wait(5)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])
    finally:
        timeouts.os._exit = original
    assert exits == [timeouts.HARD_TIMEOUT_EXIT]


def test_crash_evidence_kinds(tmp_path: Path) -> None:
    """Fault text gives the signal, a marker gives timeout, an exit status the code."""
    (tmp_path / "fault-gw0.txt").write_text("Fatal Python error: Aborted\n\nThread ...")
    crash, _ = read_evidence(tmp_path, "gw0", "torchcts::a/b/c/-/-", None)
    assert (crash.kind, crash.signal) == (CrashKind.SIGNAL, "SIGABRT")
    crash, _ = read_evidence(tmp_path, "gw1", "torchcts::a/b/c/-/-", -9)
    assert (crash.kind, crash.signal) == (CrashKind.SIGNAL, "SIGKILL")
    crash, _ = read_evidence(tmp_path, "gw2", "torchcts::a/b/c/-/-", 3)
    assert (crash.kind, crash.exit_code) == (CrashKind.SUBPROCESS, 3)
    timeout_marker_path(tmp_path, "gw3").write_text(
        '{"node_id": "torchcts::a/b/c/-/-", "limit_s": 2}'
    )
    crash, _ = read_evidence(tmp_path, "gw3", "torchcts::a/b/c/-/-", 1)
    assert crash.kind is CrashKind.TIMEOUT
    crash, _ = read_evidence(tmp_path, "gw4", "torchcts::a/b/c/-/-", None)
    assert crash.kind is CrashKind.WORKER_LOST


def test_cli_arguments_leave_workers_to_the_work_and_restart_limit() -> None:
    """No -n: pytest gets -n auto (the plugin chooses); an explicit -n is passed as
    given; restarts effectively unlimited."""
    args = build_pytest_args(Path("m.py"), None, "results", True, ["-k", "add"])
    assert args[args.index("-n") + 1] == "auto"
    assert args[args.index("--max-worker-restart") + 1] == "1000000"
    assert args[-2:] == ["-k", "add"] and "--torchcts-quiet" in args
    given = build_pytest_args(Path("m.py"), "3", "results", False, [])
    assert given[given.index("-n") + 1] == "3"


def test_importing_the_plugin_loads_only_option_registration() -> None:
    """pytest imports the plugin in every session: it must load nothing but its
    options (no schema, no torch, no roles) until --torchcts-manifest asks for a run."""
    import subprocess
    import sys

    code = (
        "import sys, torchcts_runner.plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith(('torchcts', 'torch'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(
        sorted(
            [
                "torchcts_runner",
                "torchcts_runner.defaults",
                "torchcts_runner.options",
                "torchcts_runner.plugin",
            ]
        )
    )


def test_crash_record_runlog_tail_keeps_the_crashed_case(tmp_path: Path) -> None:
    """A hang long enough for 40 other starts to fill the ring still leaves the
    crashed case's own start in its crash record's runlog tail."""
    from types import SimpleNamespace

    from torchcts_runner.crash_recorder import CrashRecorder
    from torchcts_runner.runlog import RunLog, runlog_path

    settings = SimpleNamespace(results_dir=tmp_path)
    recorder = CrashRecorder(settings, "k", "hw", lambda: None)  # type: ignore[arg-type]
    log = RunLog(runlog_path(tmp_path, "k"))
    hung = "torchcts::fake/hang/forward/float32/0"
    recorder.note_start(hung, log.start(hung, "gw0").line())
    for i in range(40):
        log.start(f"torchcts::fake/ok/forward/float32/{i}", "gw1")
    tail = recorder._runlog_tail(hung)
    assert hung in tail[0] and len(tail) == 33
    assert recorder._runlog_tail("torchcts::fake/ok/forward/float32/39")[-1].endswith(
        "fake/ok/forward/float32/39"
    )


def test_op_filter_matches_an_op_by_its_name_without_the_variant() -> None:
    """`--op div` selects `div.no_rounding_mode` (a source matches OpInfo names), so
    it is not reported as matching nothing; a typo is, with the closest names."""
    from types import SimpleNamespace

    from torchcts_schema import unmatched_filter

    case = SimpleNamespace(op="div.no_rounding_mode", dtype="float32", suite="opinfo")
    nn = SimpleNamespace(op="nn.functional.conv2d", dtype="float32", suite="opinfo")
    selected = SimpleNamespace(runnable=[case], not_run=[nn])
    assert unmatched_filter(selected, ["div"], [], []) is None
    assert unmatched_filter(selected, ["nn.functional.conv*"], [], []) is None
    problem = unmatched_filter(selected, ["dvi"], [], [])
    assert problem is not None and "'dvi' matches nothing" in problem
    assert unmatched_filter(selected, [], ["float33"], []) is not None


def test_a_verdict_note_lands_in_the_record_detail(tmp_path: Path) -> None:
    """What a case reports without judging (compile's graph breaks) is the passed
    record's detail, after any detail it had, cut to one paragraph."""
    from torchcts_runner.case_evidence import NOTE_LIMIT, Judging, with_judging_evidence
    from torchcts_schema import CaseSpec, ExpectedSource, Manifest, Verdict, record_for

    spec = CaseSpec("s/x/check/-/-", "s", "x", "check", None, None, 1,
                    ExpectedSource.CPU_REFERENCE, "s")  # fmt: skip
    manifest = Manifest(path=tmp_path / "m.py", digest="", device="cpu",
                        backend_name="cpu")  # fmt: skip

    def detail(verdict: Verdict, before: str | None = None) -> str | None:
        record = record_for(spec, spec.case_id, status=Status.PASSED, detail=before)
        judged = with_judging_evidence(
            record, Judging(verdict=verdict), manifest=manifest, device="cpu",
            results_dir=tmp_path, run_key="k",
        )  # fmt: skip
        assert judged.status is Status.PASSED
        return judged.detail

    assert detail(Verdict(True)) is None
    assert detail(Verdict(True, note="graph_breaks=1")) == "graph_breaks=1"
    assert detail(Verdict(True, note="n"), before="retried") == "retried; n"
    assert len(detail(Verdict(True, note="x" * 2000)) or "") == NOTE_LIMIT


def test_an_unknown_option_line_names_the_flag_without_its_value() -> None:
    """--levle=4 is named as --levle with --level suggested; a flag close to no
    known one gets no suggestion, a short one is never matched to a long one."""
    from torchcts_runner.unknown_options import unknown_option_line

    known = ["--level", "--op", "-k", "-x"]
    assert unknown_option_line([], known) is None
    line = unknown_option_line(["--levle=4"], known)
    assert line == "unknown option --levle (did you mean --level?)"
    assert unknown_option_line(["--zzzzzz"], known) == "unknown option --zzzzzz"
    assert unknown_option_line(["-l"], known) == "unknown option -l"
