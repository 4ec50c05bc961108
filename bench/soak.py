"""``bin/nox -s soak``: interrupt faulty simdev runs at random moments, resume them, and
check that each resumed result is the uninterrupted one, case for case.

One uninterrupted run of a fixed selection (120 cases of six ops at level 2,
under a fault profile of deterministic faults) is the reference. Each cycle then starts
the same run in a fresh results directory and, at a random moment between its first
case start and near the end, SIGKILLs the pytest controller, SIGKILLs one xdist worker,
or sends SIGINT to the process group (Ctrl-C), the three in turns, in an order the
seed draws; then it waits for every process of the run to end and resumes with
``--resume`` until the journal says the run ended (at most three resumes) and compares
the final result with the reference (`soak_compare`). The last line is
``cycles N, records R, lost L, duplicated D, invented I, changed C, no target T``
(T: cycles that found no process to interrupt while the run was going); the exit
status is 0 when L, D, I, C and T are all 0, else 1 (2 when the reference itself
failed).

``python bench/soak.py [--cycles 10] [--seed 1] [--workers 2|auto] [--keep]``; see
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# python puts this file's folder first on sys.path, so its siblings import by name
import soak_procs as procs
from soak_compare import Comparison, Outcome, compare, outcome_of
from torchcts_schema import ArtifactError, load_result

ROOT = Path(__file__).resolve().parents[1]
# a few ops at level 2 in two dtypes: 120 cases, each fault below hits some of them
SELECTION = [
    *("--level", "2", "--dtype", "float32", "--dtype", "int64"),
    *(f"--op={op}" for op in ("exp", "neg", "bmm", "sin", "where", "abs")),
]
# deterministic faults only, so an uninterrupted run always ends the same way; each
# crash costs a worker restart, so one segfault (x.exp_() on a vector) and one
# GIL-holding hang (x.neg_() in float32), which the short case timeout ends
PROFILE = {
    "name": "soak",
    "description": "bench/soak.py: every kind of ending, each on a few cases",
    "rules": [
        {
            "op": "aten::exp.out",
            "dtype": "float32",
            "ndim": 1,
            "inplace": True,
            "fault": "segfault",
        },
        {"op": "aten::neg.out", "dtype": "float32", "inplace": True, "fault": "hang"},
        {"op": "aten::bmm.out", "dtype": "float32", "fault": "runtime_error"},
        {"op": "aten::sin.out", "dtype": "float32", "fault": "wrong_values"},
        {"op": "aten::where.self", "fault": "not_implemented"},
    ],
}
LIMITS = '{"case_timeout_s": 3, "workers": 2, "memory_mb": 4096}'
ACTIONS = ("kill-controller", "kill-worker", "sigint")
LATEST_KILL = 0.9  # interrupt within the first 90% of the reference's case phase
RUN_LIMIT_S = 300.0  # one run or one resume
EXIT_LIMIT_S = 60.0  # for the CLI to end after the interruption
ORPHAN_LIMIT_S = 30.0  # for orphaned workers to notice and leave
MAX_RESUMES = 3


class ReferenceFailed(Exception):
    """The uninterrupted run did not complete: nothing to compare with."""


class Soak:
    """The temporary tree, the command, and every run started (to end them all)."""

    def __init__(self, root: Path, workers: str) -> None:
        self.root = root
        self.runs: list[procs.Run] = []
        self.manifest = root / "manifest.py"
        text = (ROOT / "manifests" / "simdev.py").read_text(encoding="utf-8")
        text, found = re.subn(
            r"^RESOURCE_LIMITS = .*$", f"RESOURCE_LIMITS = {LIMITS}", text, flags=re.M
        )
        assert found == 1, "manifests/simdev.py has no RESOURCE_LIMITS line"
        self.manifest.write_text(text, encoding="utf-8")
        profile = root / "soak_profile.json"
        profile.write_text(json.dumps(PROFILE, indent=1), encoding="utf-8")
        self.env = {**os.environ, "TORCHCTS_SIMDEV_PROFILE": str(profile)}
        self.env.pop("PYTEST_ADDOPTS", None)
        self.workers = workers  # "auto": no -n, the runner chooses by the work

    def command(self, results: Path, *extra: str) -> list[str]:
        """The torchcts-run command line of one run (or resume) into `results`."""
        return [
            sys.executable, "-m", "torchcts_runner.cli", "--manifest", str(self.manifest),
            "--results", str(results), *SELECTION, *self.workers_option(), "--quiet",
            *extra,
        ]  # fmt: skip

    def workers_option(self) -> list[str]:
        """``-n N``; none for "auto" (in process, on workers after a lost process)."""
        return [] if self.workers == "auto" else ["-n", self.workers]

    def start(self, results: Path, *extra: str) -> procs.Run:
        """Start a run (cwd: the temp root, away from the repository's pytest config)."""
        results.mkdir(parents=True, exist_ok=True)
        log = results.parent / f"{results.name}.log"
        run = procs.launch(self.command(results, *extra), self.root, self.env, log)
        self.runs.append(run)
        return run

    def finish(self, run: procs.Run, limit_s: float) -> tuple[int | None, int]:
        """Wait for the CLI (bounded), then for its descendants; kill what is left.

        Returns the CLI's exit status (None: it had to be killed) and how many
        processes were still alive and killed at the end."""
        code = procs.wait_exit(run, limit_s)
        if code is None or not procs.wait_gone(run, ORPHAN_LIMIT_S):
            return code, procs.end(run)
        return code, 0

    def end_all(self) -> int:
        """Kill every process any run left behind."""
        return sum(procs.end(run) for run in self.runs)


def _first_start(results: Path) -> bool:
    """Some case has started: the runlog holds a line with a sequence number."""
    for path in run_dir(results).glob("*_runlog.txt"):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(line[:8].isdigit() for line in data.split(b"\n")):
            return True
    return False


def _wait_first_start(run: procs.Run, results: Path) -> float | None:
    """When the first case started (monotonic), None when the run ended first."""
    deadline = run.started + RUN_LIMIT_S
    while time.monotonic() < deadline and not run.ended():
        if _first_start(results):
            return time.monotonic()
        time.sleep(procs.POLL_S)
    return None


def _last_journal_growth(run: procs.Run, results: Path) -> float:
    """Wait for the run to end (bounded); when its journal last grew (its run_end,
    just after the last case), so interruptions land among cases, not in the report
    rendering and process exits after them."""
    deadline = run.started + RUN_LIMIT_S
    size, last = -1, time.monotonic()
    while time.monotonic() < deadline and not run.ended():
        path = _journal(results)
        now = path.stat().st_size if path is not None else -1
        if now != size:
            size, last = now, time.monotonic()
        time.sleep(procs.POLL_S)
    return last


def run_dir(results: Path) -> Path:
    """Where the run writes: a subset run (this soak's --op selection) has its own
    results folder under ``selections/``."""
    folders = sorted((results / "selections").glob("*"))
    return folders[0] if folders else results


def _journal(results: Path) -> Path | None:
    found = sorted(run_dir(results).glob("*_journal.jsonl"))
    return found[0] if found else None


def _journal_lines(results: Path) -> list[str]:
    path = _journal(results)
    if path is None:
        return []
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _executed_lines(results: Path) -> int:
    return sum(
        1 for line in _journal_lines(results) if line.startswith('{"type":"case"')
    )


def _run_ended(results: Path) -> bool:
    """The journal's last run_start has its run_end: the run completed."""
    state = False
    for line in _journal_lines(results):
        if line.startswith('{"type":"run_start"'):
            state = False
        elif line.startswith('{"type":"run_end"'):
            state = True
    return state


def outcomes(results: Path) -> dict[str, Outcome]:
    """Case id -> outcome of every record the results directory holds, and
    ``outside:<reason>`` -> its count for the cases outside the selection, which a
    run counts by reason instead of recording (a lost or changed count is then a
    lost or changed entry like a record's)."""
    try:
        artifact = load_result(run_dir(results))
    except ArtifactError:
        return {}
    found = {
        r.case_id: outcome_of(
            r.status.value,
            r.crash.kind.value if r.crash else None,
            r.not_run_reason.value if r.not_run_reason else None,
        )
        for r in artifact.records
    }
    for reason, count in artifact.metadata.outside.items():
        found[f"outside:{reason}"] = outcome_of("not_run", not_run_reason=f"{count}")
    return found


def _interrupt(
    run: procs.Run, action: str, rng: random.Random, *, in_process: bool = False
) -> str | None:
    """Do `action` now; returns what was done (a worker may be between restarts),
    or None when no process to interrupt was found within 5 s while the run lived.
    `in_process`: the run may execute cases in its pytest process, so a kill-worker
    finding no worker kills that process (the one executing cases) instead."""
    if action == "sigint":
        procs.signal_group(run, signal.SIGINT)
        return "sigint to the group"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not run.ended():
        if action == "kill-controller":
            pid = procs.controller(run)
            if pid is not None:
                procs.kill(pid)
                return f"sigkill controller {pid}"
        else:
            alive = procs.workers(run)
            if alive:
                pid = rng.choice(alive)
                procs.kill(pid)
                return f"sigkill worker {pid} (of {len(alive)})"
            pid = procs.controller(run) if in_process else None
            if pid is not None:
                procs.kill(pid)
                return f"sigkill in-process executor {pid}"
        time.sleep(procs.POLL_S)
    return None


def _ending(name: str, code: int | None, killed: int, run: procs.Run) -> str:
    took = time.monotonic() - run.started
    left = f", {killed} left over killed" if killed else ""
    return f"{name} exit {code} ({took:.0f}s{left})"


def reference(soak: Soak) -> tuple[dict[str, Outcome], float]:
    """The uninterrupted run: its outcomes and the length of its case phase (s)."""
    results = soak.root / "reference"
    run = soak.start(results)
    first = _wait_first_start(run, results)
    last = _last_journal_growth(run, results)
    code, killed = soak.finish(run, RUN_LIMIT_S)
    phase = last - (first or run.started)
    if first is None or code is None or not _run_ended(results):
        raise ReferenceFailed(
            f"soak: the reference run did not complete (exit {code}, killed {killed}); "
            f"see {results}.log (run with --keep)"
        )
    found = outcomes(results)
    statuses = Counter(o.status for o in found.values())
    print(
        f"reference: {sum(v for k, v in statuses.items() if k != 'not_run')} executed "
        f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}), first case "
        f"at +{first - run.started:.1f}s, cases for {phase:.1f}s",
        flush=True,
    )
    return found, phase


def cycle(
    soak: Soak,
    index: int,
    action: str,
    rng: random.Random,
    ref: dict[str, Outcome],
    phase: float,
) -> tuple[Comparison, bool]:
    """One interrupted run, resumed to the end and compared; prints its line.
    The flag: no process to interrupt was found while the run was going (the soak
    then tested nothing, which must not read as a pass)."""
    delay = rng.uniform(0, LATEST_KILL) * phase
    results = soak.root / f"cycle{index:02d}"
    began = time.monotonic()
    run = soak.start(results)
    first = _wait_first_start(run, results)
    missed = False
    if first is None:
        what = "no case started"
    else:
        while time.monotonic() < first + delay and not run.ended():
            time.sleep(procs.POLL_S)
        if run.ended():
            what = f"{action} planned at +{delay:.1f}s: the run ended first"
        else:
            recorded = _executed_lines(results)
            done = _interrupt(run, action, rng, in_process=soak.workers == "auto")
            missed = done is None and not run.ended()
            if done is None:
                done = f"{action}: NO TARGET FOUND" if missed else f"{action}: ended"
            what = f"{done} at +{delay:.1f}s ({recorded} recorded)"
    code, killed = soak.finish(run, EXIT_LIMIT_S)
    notes = [_ending("run", code, killed, run)]
    resumes = 0
    while not _run_ended(results) and resumes < MAX_RESUMES:
        resumes += 1
        run = soak.start(results, "--resume")
        code, killed = soak.finish(run, RUN_LIMIT_S)
        notes.append(_ending(f"resume {resumes}", code, killed, run))
    if not _run_ended(results):
        notes.append("NOT COMPLETE")
    result = compare(ref, outcomes(results), _journal_lines(results))
    counts = ", ".join(
        f"{name} {result.counts[name]}"
        + (f" {getattr(result, name)}" if result.counts[name] else "")
        for name in ("lost", "duplicated", "invented", "changed")
    )
    print(
        f"cycle {index}: {what}; {', '.join(notes)}; {time.monotonic() - began:.0f}s: "
        f"records {result.records}, {counts}",
        flush=True,
    )
    return result, missed


def _workers(text: str) -> str:
    """A worker count of at least 1, or "auto". With -n 0 the soak's segfault ends
    the uninterrupted run too, so there would be no reference."""
    if text == "auto" or (text.isdigit() and int(text) >= 1):
        return text
    raise argparse.ArgumentTypeError(f"expected auto or a count >= 1, got {text!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the soak; see the module docstring."""
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10, help="interrupted runs")
    parser.add_argument("--seed", type=int, default=1, help="seeds what and when")
    parser.add_argument(
        "--workers",
        type=_workers,
        default="2",
        help="xdist workers (-n N), or auto: no -n, the runner chooses by the work",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    actions = rng.sample(ACTIONS, len(ACTIONS))  # in turn: 3 cycles try each once
    root = Path(tempfile.mkdtemp(prefix="torchcts-soak-"))
    soak = Soak(root, options.workers)
    total = Counter[str]()
    records = 0
    missed = 0
    started = time.monotonic()
    try:
        try:
            ref, phase = reference(soak)
        except ReferenceFailed as exc:
            print(exc, flush=True)
            return 2
        for index in range(1, options.cycles + 1):
            action = actions[(index - 1) % len(actions)]
            result, no_target = cycle(soak, index, action, rng, ref, phase)
            missed += no_target
            total.update(result.counts)
            records += result.records
    finally:
        left = soak.end_all()
        if options.keep:
            print(f"soak: kept {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"soak: {elapsed:.0f}s in all, {left} process(es) left and killed at the end")
    names = ("lost", "duplicated", "invented", "changed")
    print(
        f"cycles {options.cycles}, records {records}, "
        + ", ".join(f"{name} {total[name]}" for name in names)
        + f", no target {missed}",
        flush=True,
    )
    return 0 if not any(total[name] for name in names) and not missed else 1


if __name__ == "__main__":
    sys.exit(main())
