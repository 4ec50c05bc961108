"""A fake case source for the runner's tests only (never shipped, never used in runs).

It implements the case-source contract over the schema's types (CaseSpec, Selection,
SelectedCases and Verdict come from torchcts_schema; it adds select_cases, get_case,
prepare, OracleUnavailable, write_oracle_failure) with ops whose names say how they behave on
the "device", so plugin mechanics can be tested without the real case generator:
ok, wrong, unsupported, notimpl_msg, boom, oracle, skip, segv, abort, exit, sigkill,
pyhang, hang (a hang Python signals cannot interrupt), gilhang (one holding the
GIL, so no Python thread runs either), slow, sleepy, stormsegv (every worker
segfaults at once), sysexit, kbint, chatty and chattywrong (print to stdout and
fd 2; the second is also wrong), hostile (a 1 MB message with a lone surrogate,
NUL and escape sequences), memblow (allocates until a memory limit stops it), poison
(a device fault that leaves the fake device broken for the process), stealth (breaks
it without raising); with FAKE_DEVICE_UNUSABLE set the device never works. As a
backend module it has ``torchcts_health_check``, which fails once the device broke.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fnmatch
import json
import os
import signal
import threading
import time
import unittest
from pathlib import Path
from typing import Any

from torchcts_schema import (
    CaseRecord,
    CaseSpec,
    ExpectedSource,
    NextFix,
    NotRunReason,
    SelectedCases,
    Selection,
    Status,
    Verdict,
    make_case_id,
    record_for,
    split_case_id,
)

SUITE = "fake"
BACKEND_STATE: dict[str, Any] = {}
BROKEN: list[str] = []  # the op that broke the fake device in this process


class OracleUnavailable(Exception):
    """The fake reference cannot be built."""


def _spec(op: str, dtype: str, sample: int) -> CaseSpec:
    return CaseSpec(
        make_case_id(SUITE, op, "forward", dtype, sample), SUITE, op, "forward",
        dtype, sample, 1, ExpectedSource.CPU_REFERENCE, "forward",
    )  # fmt: skip


def _not_run(spec: CaseSpec, reason: NotRunReason) -> CaseRecord:
    return record_for(
        spec,
        spec.case_id,
        status=Status.NOT_RUN,
        not_run_reason=reason,
        next_fix=NextFix.SUPPORT_SURFACE,
    )


def select_cases(manifest: Any, selection: Selection) -> SelectedCases:
    log = os.environ.get("FAKE_SELECT_LOG")
    if log:  # lets tests count which processes select
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    if "bogus" in selection.suites:  # a selection this source refuses to make
        raise ValueError("unknown suite 'bogus' (known: fake)")
    out = SelectedCases()
    samples = manifest.max_samples_per_op or 1
    for op in manifest.ops_include:
        for dtype, support in manifest.dtypes.items():
            for sample in range(samples):
                spec = _spec(op, dtype, sample)
                if support is False:
                    out.not_run.append(_not_run(spec, NotRunReason.DTYPE_NOT_SUPPORTED))
                elif (selection.dtypes and dtype not in selection.dtypes) or (
                    selection.op_globs
                    and not any(fnmatch.fnmatch(op, g) for g in selection.op_globs)
                ):
                    out.not_run.append(
                        _not_run(spec, NotRunReason.FILTERED_BY_SELECTION)
                    )
                else:
                    out.runnable.append(spec)
    return out


def get_case(case_id: str) -> CaseSpec:
    _, op, _, dtype, sample = split_case_id(case_id)
    return _spec(op, dtype or "float32", sample or 0)


def case_surfaces(spec: CaseSpec) -> tuple[str, ...]:
    """The overloads a case "reaches": ``aten::<op>.Tensor`` for the ops listed in
    FAKE_SURFACES (comma-separated), else the spec's own (none)."""
    listed = os.environ.get("FAKE_SURFACES", "").split(",")
    return (f"aten::{spec.op}.Tensor",) if spec.op in listed else spec.surfaces


def warm_coverage() -> None:
    """With FAKE_COVERAGE set: note the call (and its thread) in FAKE_COVERAGE."""
    _note_coverage("warm")


def _note_coverage(what: str) -> None:
    log = os.environ.get("FAKE_COVERAGE")
    if log and log != "1":
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{what} {threading.current_thread().name}\n")


def refresh_coverage(results_dir: Path) -> str | None:
    """With FAKE_COVERAGE set: write coverage/summary.md and say so (whole runs)."""
    if not os.environ.get("FAKE_COVERAGE"):
        return None
    _note_coverage("refresh")
    (results_dir / "coverage").mkdir(parents=True, exist_ok=True)
    (results_dir / "coverage" / "summary.md").write_text("fake\n", encoding="utf-8")
    return f"coverage: fake summary written; {results_dir / 'coverage'}/"


def _barrier(parties: int = 2, timeout_s: float = 20.0) -> None:
    """Wait until `parties` processes reached this point (FAKE_BARRIER dir)."""
    where = Path(os.environ["FAKE_BARRIER"])
    where.mkdir(parents=True, exist_ok=True)
    (where / str(os.getpid())).touch()
    deadline = time.monotonic() + timeout_s
    while len(list(where.iterdir())) < parties and time.monotonic() < deadline:
        time.sleep(0.01)


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
_STARTED_WITH = {n: os.environ[n] for n in _THREAD_VARIABLES if n in os.environ}


class PreparedCase:
    def __init__(self, spec: CaseSpec) -> None:
        self.spec = spec

    def reference(self) -> object:
        if self.spec.op == "oracle":
            raise OracleUnavailable("no CPU reference for this sample")
        if self.spec.op == "threads":  # what the test expects the process started with
            return os.environ.get("FAKE_EXPECT_THREADS", "").split(",")
        return [1.0, 2.0, float(self.spec.sample or 0)]

    def run_on(self, device: str) -> object:
        op = self.spec.op
        _check_device()
        if op == "poison":
            BROKEN.append(self.spec.case_id)
            raise RuntimeError("fake device fault; the device is now broken")
        if op == "stealth":
            BROKEN.append(self.spec.case_id)
        if op == "wrong":
            return [1.0, 2.5, 0.0]
        if op == "unsupported":
            raise NotImplementedError(f"fake op on {device}")
        if op == "notimpl_msg":
            raise RuntimeError(f"aten::fake is not implemented for '{device}'")
        if op == "boom":
            raise RuntimeError("boom: the backend broke")
        if op == "skip":
            raise unittest.SkipTest("needs two devices")
        if op == "segv":
            ctypes.string_at(0)
        if op == "abort":
            os.abort()
        if op == "exit":
            os._exit(3)
        if op == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if op == "pyhang":
            time.sleep(120)
        if op == "hang":  # signals blocked: SIGALRM cannot interrupt, like native code
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            time.sleep(120)
        if op == "gilhang":  # a deadlocked driver: native code holding the GIL
            libc = ctypes.PyDLL(ctypes.util.find_library("c") or None)
            mutex = ctypes.create_string_buffer(128)
            libc.pthread_mutex_init(mutex, None)
            libc.pthread_mutex_lock(mutex)
            libc.pthread_mutex_lock(mutex)
        if op == "slow":
            time.sleep(0.3)
        if op == "sleepy":  # long enough to be in flight when a test interrupts
            time.sleep(float(os.environ.get("FAKE_SLEEP_S", "1.0")))
        if op == "stormsegv":  # every worker segfaults at the same moment
            _barrier()
            ctypes.string_at(0)
        if op == "sysexit":
            raise SystemExit(4)
        if op == "kbint":
            raise KeyboardInterrupt("raised by the kernel, not by a user")
        if op == "hostile":  # a backend message a terminal or execnet would choke on
            raise RuntimeError(
                "x\ud800y \x00 \x1b[2J\x1b]0;owned\x07 " + "m" * 1_000_000
            )
        if op == "memblow":  # allocates until the memory limit stops it
            chunks = [bytearray(64 * 1024 * 1024) for _ in range(64)]
            return [float(len(chunks))]
        if op == "threads":  # the intra-op thread variables this process started with
            return [_STARTED_WITH.get(name, "unset") for name in _THREAD_VARIABLES]
        if op in ("chatty", "chattywrong"):  # what a backend prints is captured
            print(f"chatty stdout {self.spec.case_id}")
            os.write(2, f"chatty fd2 {self.spec.case_id}\n".encode())
            if op == "chattywrong":
                return [0.0]
        if op == "threadraise":  # a backend thread that dies during the case
            thread = threading.Thread(target=_raise_in_thread)
            thread.start()
            thread.join()
        if op == "configured":
            return self.reference() if BACKEND_STATE.get("configured") else [0.0]
        return self.reference()

    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> Verdict:
        if expected == observed:
            return Verdict(True)
        return Verdict(False, f"values differ: {observed} != {expected}")

    def repro_source(
        self, device: str, backend_import: str | None, options: dict[str, Any]
    ) -> str:
        return f"# repro of {self.spec.case_id} on {device}\n"


def _raise_in_thread() -> None:
    raise RuntimeError("fake backend thread fault")


def prepare(spec: CaseSpec, manifest: Any) -> PreparedCase:
    return PreparedCase(spec)


def write_oracle_failure(
    results_dir: Path, run_key: str, spec: CaseSpec, exc: BaseException
) -> None:
    path = results_dir / f"{run_key}_opinfo_oracle_failures_{os.getpid()}.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"case_id": spec.case_id, "problem": str(exc)}) + "\n")


def _check_device() -> None:
    if os.environ.get("FAKE_DEVICE_UNUSABLE"):
        raise RuntimeError("fake device not answering")
    if BROKEN:
        raise RuntimeError(f"fake device is broken (since {BROKEN[0]})")


def torchcts_health_check(device: str) -> None:
    """The fake backend's own probe: raises once the fake device broke."""
    log = os.environ.get("FAKE_PROBE_LOG")
    if log:  # lets tests count probes
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {device}\n")
    _check_device()


def torchcts_configure(options: dict[str, Any]) -> None:
    """Acts as a fake backend module too: remembers that it was configured."""
    BACKEND_STATE["configured"] = options.get("flag") == "on"
