"""One ``torchcts-run`` watched from outside: wall, CPU seconds, first case, tail.

The run is started as a child of this process and reaped with ``os.wait4``, so its
CPU seconds are the kernel's own accounting of the run and of every process it
waited for (pytest, xdist workers, isolation children, probes). While it runs, a
thread follows the journal the run writes (``<key>_journal.jsonl``, one line per
finished case, on disk before the next case is handled) and notes when each
executed case's line appeared: the first one gives the time to first case, the last
one the tail (last case to exit). Nothing inside the runner is asked for a timing,
so the figures hold whatever the runner's own clocks say; their resolution is the
follower's poll interval (``POLL_S``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import load_average
from proc_watch import ProcessWatch
from torchcts_schema import (
    HISTORY_SUFFIX,
    JOURNAL_SUFFIX,
    LATEST_SUFFIX,
    REPORT_SUFFIXES,
)

POLL_S = 0.02
PROC_POLLS = 5  # the process tree is sampled every fifth poll (0.1 s), and at the
# poll that sees the first case
ROOT = Path(__file__).resolve().parent.parent
NAN = float("nan")


@dataclass
class JournalFollower:
    """Reads the journals under a results dir as they grow; notes executed cases."""

    results: Path
    launched: float
    first_s: float = NAN  # after launch
    last_s: float = NAN
    cases: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    _offsets: dict[Path, tuple[int, int]] = field(default_factory=dict)  # inode, end
    _partial: dict[Path, bytes] = field(default_factory=dict)

    def _journals(self) -> list[Path]:
        """The journals now under the results dir (none this time if a folder the
        run is removing vanished during the walk: the next poll looks again)."""
        try:
            return sorted(self.results.rglob(f"*{JOURNAL_SUFFIX}"))
        except OSError:
            return []

    def skip_existing(self) -> None:
        """Ignore what the journals hold now (a kept results dir's earlier runs)."""
        for path in self._journals():
            with contextlib.suppress(OSError):
                info = path.stat()
                self._offsets[path] = (info.st_ino, info.st_size)

    def poll(self, now: float) -> None:
        """Read what was appended since the last poll; `now` dates its case lines.
        A journal the run set aside and started afresh (a new inode) is read anew."""
        for path in self._journals():
            try:
                with open(path, "rb") as fh:
                    inode = os.fstat(fh.fileno()).st_ino
                    known, offset = self._offsets.get(path, (inode, 0))
                    if known != inode:
                        offset = 0
                        self._partial.pop(path, None)
                    fh.seek(offset)
                    data = fh.read()
            except OSError:
                continue
            if not data:
                continue
            self._offsets[path] = (inode, offset + len(data))
            data = self._partial.pop(path, b"") + data
            *lines, rest = data.split(b"\n")
            if rest:
                self._partial[path] = rest
            for line in lines:
                self.line(line, now)

    def line(self, line: bytes, now: float) -> None:
        """One complete journal line, seen at `now`."""
        try:
            entry = json.loads(line)
        except ValueError:
            return
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind == "run_start" and not self.metadata:
            self.metadata = dict(entry.get("metadata") or {})
        if kind != "case":
            return
        record = entry.get("record") or {}
        if record.get("status") == "not_run":
            return  # accounting, not execution
        self.cases += 1
        moment = now - self.launched
        if self.cases == 1:
            self.first_s = moment
        self.last_s = moment


@dataclass(frozen=True)
class RunObservation:
    """What one run cost, seen from outside."""

    wall_s: float
    cpu_s: float
    exit_code: int
    cases: int  # executed cases journaled (not_run accounting left out)
    first_case_s: float  # launch to the first executed case's journal line
    first_case_cpu_s: float  # CPU seconds of the run's processes by then
    torch_by_first_case: int  # processes that had loaded torch by then
    tail_s: float  # the last executed case's journal line to the run's exit
    workers: int | None  # executing processes the run used (0: in process)
    workers_why: str
    loads: tuple[float, float]  # load average before and after
    artifacts: dict[str, int]  # kind -> bytes

    @property
    def processes(self) -> int:
        """Processes that executed cases (1 for an in-process run)."""
        return max(1, self.workers or 0)


def observe(
    args: list[str],
    *,
    workdir: Path,
    results: str = "results",
    env: dict[str, str] | None = None,
    keep: bool = False,
) -> RunObservation:
    """Run ``torchcts-run ARGS --results RESULTS`` in `workdir` (a fresh results dir
    each time unless `keep`), and observe it."""
    out = workdir / results
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{results}.log"
    command = [sys.executable, "-m", "torchcts_runner.cli", *args, "--results", results]
    before = load_average()
    with open(log, "wb") as sink:
        launched = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        follower = JournalFollower(out, launched)
        follower.skip_existing()
        watch = ProcessWatch(proc.pid)
        at_first: list[tuple[float, int]] = []  # (CPU-s, torch processes)
        stop = threading.Event()

        def follow() -> None:
            polls = 0
            while not stop.is_set():
                now = time.monotonic()
                follower.poll(now)
                if polls % PROC_POLLS == 0 or (follower.cases and not at_first):
                    watch.poll(now - launched)
                if follower.cases and not at_first:
                    at_first.append((watch.cpu_s(), watch.torch_by(follower.first_s)))
                polls += 1
                stop.wait(POLL_S)

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        _, status, usage = os.wait4(proc.pid, 0)
        ended = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        thread.join()
    follower.poll(ended)  # lines the last poll missed are dated at the exit
    workers, why = workers_of(follower.metadata)
    print(  # a long bench says what it measured as it goes
        f"#   {shlex.join(args)[:110]}: {ended - launched:.1f} s wall, "
        f"{usage.ru_utime + usage.ru_stime:.1f} CPU-s, {follower.cases} cases, "
        f"exit {proc.returncode}, load {before:.1f}",
        file=sys.stderr,
        flush=True,
    )
    if proc.returncode:  # the log goes with the temporary dir: say how it ended
        for line in log.read_text(errors="replace").splitlines()[-3:]:
            print(f"#     {line[:160]}", file=sys.stderr, flush=True)
    return RunObservation(
        wall_s=ended - launched,
        cpu_s=usage.ru_utime + usage.ru_stime,
        exit_code=proc.returncode,
        cases=follower.cases,
        first_case_s=follower.first_s,
        first_case_cpu_s=at_first[0][0] if at_first else NAN,
        torch_by_first_case=at_first[0][1] if at_first else 0,
        tail_s=(ended - launched) - follower.last_s,
        workers=workers,
        workers_why=why,
        loads=(before, load_average()),
        artifacts=artifact_sizes(out),
    )


def workers_of(metadata: dict[str, Any]) -> tuple[int | None, str]:
    """The executing processes a run's metadata says it used, and why."""
    options = metadata.get("options") or {}
    chosen = options.get("workers")
    if isinstance(chosen, dict) and isinstance(chosen.get("count"), int):
        return int(chosen["count"]), str(chosen.get("why") or "")
    words = str(options.get("pytest_command") or "").split()
    if "-n" in words[:-1]:
        value = words[words.index("-n") + 1]
        if value.isdigit():
            return int(value), "-n in the pytest command"
    return None, "not recorded"


def artifact_sizes(results: Path) -> dict[str, int]:
    """Bytes per kind of artifact under a results dir (``other``: the rest)."""
    sizes = {"journal": 0, "history": 0, "latest": 0, "reports": 0, "other": 0}
    for path in results.rglob("*"):
        if not path.is_file():
            continue
        name = path.name
        if name.endswith(JOURNAL_SUFFIX):
            kind = "journal"
        elif path.parent.name.endswith(HISTORY_SUFFIX):
            kind = "history"
        elif name.endswith(LATEST_SUFFIX):
            kind = "latest"
        elif name.endswith(REPORT_SUFFIXES):
            kind = "reports"
        else:
            kind = "other"
        sizes[kind] += path.stat().st_size
    return sizes


def checkout_like(workdir: Path) -> Path:
    """`workdir` with the repository's ``manifests/`` and ``bin/`` linked in, so a
    run there reads like one in a checkout and writes only under `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("manifests", "bin"):
        link = workdir / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return workdir


__all__ = [
    "JournalFollower",
    "RunObservation",
    "artifact_sizes",
    "checkout_like",
    "observe",
    "workers_of",
]
