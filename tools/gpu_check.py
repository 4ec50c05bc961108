"""The GPU check: on a machine with NVIDIA GPUs, run every hand-written suite
``manifests/cuda.py`` claims (at its level) and the whole manifest at level 2, within
a time budget, and leave their scorecards and verified submission archives in one
folder.

Started by ``tools/gpu-check.sh OUT`` (which picks the Python whose torch sees a
GPU); usage and what lands in OUT: the README's "Check a GPU machine". Each run is one
``torchcts-run --json`` of the interpreter running this file, with ``-n`` the GPU
count times the workers per GPU (xdist worker ``gw<i>`` runs on GPU ``i mod count``);
a run still going when the budget is spent gets SIGTERM, writes its partial report
(``--resume`` continues it) and ends with 143.

Exit status, as ``torchcts-run``'s: the first run's status that is neither 0 nor 1,
else 1 when some executed case did not pass, else 0; 3 when a run's archive could not
be built or verified; 6, with one line saying what to do, when the manifest's device
is CUDA and ``torch.cuda.is_available()`` is False; 4 when the TorchCTS tools are not
installed in that Python; 2 for a malformed option.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OK, FAILED, INTERNAL, USAGE, UNUSABLE = 0, 1, 3, 4, 6
SIGTERM_STATUS = 128 + signal.SIGTERM
GRACE_S = 60.0  # after SIGTERM, the partial report and history are written
MIN_STEP_S = 10.0  # a run given less would only start and be stopped
TOOLS = ("torchcts_runner", "torchcts_report", "torchcts_evidence", "torchcts_cases")
CUDA_WHEELS = "https://download.pytorch.org/whl/cu128"
DEFAULT_MANIFEST = "manifests/cuda.py"


@dataclass
class Step:
    """One run of the check and what became of it."""

    label: str
    args: list[str]
    code: int | None = None
    seconds: float = 0.0
    results: str | None = None  # its results directory, relative to the checkout
    counts: dict[str, int] = field(default_factory=dict)
    archive: str | None = None
    problem: str | None = None  # why its archive is missing


def shown(path: Path | str) -> str:
    """`path` as printed: relative to the checkout when inside it."""
    target = Path(path).absolute()
    try:
        return target.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def cuda_problem() -> str | None:
    """None when torch sees a CUDA (or ROCm) GPU, else the one line saying what to do."""
    python = shown(sys.executable)
    try:
        import torch
    except ImportError:
        return (
            f"{python} has no torch: build the environment (make env) and install a "
            f"CUDA build of torch in it, or set TORCHCTS_GPU_PYTHON to a Python that "
            "has one"
        )
    if torch.cuda.is_available():
        return None
    build = torch.version.cuda or torch.version.hip
    what = (
        f"built for CUDA {build} but sees no GPU (check nvidia-smi and "
        "CUDA_VISIBLE_DEVICES)"
        if build
        else "a CPU-only build"
    )
    return (
        f"torch.cuda.is_available() is False for torch {torch.__version__} in "
        f"{python} ({what}): install a CUDA build of torch (pip install torch "
        f"--index-url {CUDA_WHEELS}) in that Python, or point TORCHCTS_GPU_PYTHON at "
        "one that has it, and run tools/gpu-check.sh again"
    )


def missing_tools() -> list[str]:
    """The TorchCTS packages this interpreter cannot import."""
    import importlib.util

    return [name for name in TOOLS if importlib.util.find_spec(name) is None]


def claimed_suites(manifest_path: Path) -> list[str]:
    """The hand-written suites with a case whose capability the manifest claims."""
    from torchcts_cases.suites import all_hand_cases
    from torchcts_schema import load_manifest

    claims = set(load_manifest(manifest_path).capabilities)
    return sorted(
        {c.suite for c in all_hand_cases().values() if c.capability in claims}
    )


def device_count(device: str) -> int:
    """How many devices of the manifest's type this process sees."""
    from torchcts_runner.device_families import adapter_for

    return adapter_for(device).device_count()


def workers_for(devices: int, per_device: int) -> int:
    """xdist workers: `per_device` on every device (pinned by worker number)."""
    return max(1, devices) * max(1, per_device)


def combined_status(codes: Sequence[int]) -> int:
    """The runs' statuses as one: the first that is neither 0 nor 1, else the worst."""
    for code in codes:
        if code not in (OK, FAILED):
            return code
    return max(codes, default=OK)


def run_within(command: list[str], budget_s: float) -> tuple[int, str]:
    """Run `command` (its stderr passes through) and return its status and stdout;
    past `budget_s` it gets SIGTERM, as a user's kill would, then time to finish."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            out, _ = proc.communicate(timeout=max(1.0, budget_s))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                out, _ = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
    code = proc.returncode
    return (128 - code if code < 0 else code), out or ""  # a signal as a shell says


def tool(module: str, *args: str) -> list[str]:
    """The command line of a TorchCTS tool, with this interpreter."""
    return [sys.executable, "-m", module, *args]


def _say(text: str) -> None:
    print(f"gpu-check: {text}", flush=True)


def run_step(step: Step, budget_s: float, out: Path, manifest: str) -> None:
    """One run, then its archive (into OUT/<label>/) and the archive's check."""
    command = tool("torchcts_runner.cli", *step.args, "--json")
    _say(f"{step.label}: {shlex.join([shown(command[0]), *command[1:]])}")
    began = time.monotonic()
    code, text = run_within(command, budget_s)
    step.seconds = time.monotonic() - began
    step.code = code
    try:
        summary = json.loads(text)
    except json.JSONDecodeError:
        summary = {}
    step.results = summary.get("results") if isinstance(summary, dict) else None
    counts = summary.get("counts") if isinstance(summary, dict) else None
    step.counts = dict(counts) if isinstance(counts, dict) else {}
    if code == SIGTERM_STATUS and step.seconds >= budget_s:
        _say(f"{step.label}: stopped at the time budget; --resume continues it")
    if step.results is None or not step.counts:
        step.problem = "the run wrote no result to archive"
        return
    step.archive, step.problem = archive_run(
        Path(step.results), out / step.label, manifest
    )


def archive_run(
    results: Path, where: Path, manifest: str
) -> tuple[str | None, str | None]:
    """The run in `results` as a submission archive in `where`, verified as the
    maintainer will: its path, or None and why not."""
    from torchcts_evidence import EvidenceError, build_archive, verify_archive
    from torchcts_schema import ArtifactError

    where.mkdir(parents=True, exist_ok=True)
    try:
        built = build_archive(results, out_dir=where, manifest=Path(manifest))
    except (EvidenceError, ArtifactError) as exc:
        return None, str(exc)
    verdict = verify_archive(built.path)
    if not verdict.ok:
        return None, f"{shown(built.path)} does not verify: {verdict.problems[0]}"
    return shown(built.path), None


def summary_lines(
    steps: Sequence[Step], total_s: float, budget_s: float, out: Path
) -> list[str]:
    """What the check did, one line per run and one for the whole; paths relative
    to `out` (the file is shared with the folder)."""

    def inside(path: str | None) -> str | None:
        return None if path is None else os.path.relpath(ROOT / path, out)

    lines = []
    for step in steps:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(step.counts.items()) if n)
        where = inside(step.archive) or f"no archive ({step.problem})"
        lines.append(
            f"{step.label}: exit {step.code} in {step.seconds:.0f} s; "
            f"{counts or 'no cases'}; results {inside(step.results)}; {where}"
        )
    within = "within" if total_s <= budget_s else "over"
    lines.append(f"elapsed {total_s:.0f} s ({within} the {budget_s:.0f} s budget)")
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tools/gpu-check.sh",
        description="Run manifests/cuda.py at level 2 and its hand-written suites "
        "on this machine's GPUs within a time budget; write scorecards and archives "
        "into OUT.",
    )
    add = parser.add_argument
    add("out", type=Path, metavar="OUT", help="folder for results and archives")
    add("--manifest", default=DEFAULT_MANIFEST, help="(default: %(default)s)")
    add("--level", type=int, default=2, help="level of the whole-manifest run")
    add("--op", action="append", default=[], help="only these ops in that run")
    add(
        "--suite",
        action="append",
        default=[],
        help="these suites instead of every hand-written suite the manifest claims",
    )
    add("--budget-s", type=float, default=600.0, help="time budget (default: 600)")
    add("--workers-per-device", type=int, default=4, help="xdist workers per GPU")
    add("--workers", help="xdist workers instead (0: none)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (module docstring)."""
    options = _parser().parse_args(argv)
    os.chdir(ROOT)
    missing = missing_tools()
    # the GPU first: on a machine without one, that is the line to read
    device = "cuda" if options.manifest == DEFAULT_MANIFEST else None
    if device is None and not missing:
        from torchcts_schema import load_manifest

        try:
            device = load_manifest(options.manifest).device
        except Exception as exc:  # one line, never a traceback
            _say(str(exc))
            return USAGE
    if device == "cuda" and (problem := cuda_problem()) is not None:
        _say(problem)
        return UNUSABLE
    if missing or device is None:
        _say(f"{shown(sys.executable)} lacks {', '.join(missing)}: run make env")
        return USAGE
    out = options.out.absolute()
    results = out / "results"
    count = device_count(device)
    workers = options.workers or str(workers_for(count, options.workers_per_device))
    common = ["--manifest", options.manifest, "--results", shown(results), "--quiet"]
    common += ["-n", workers]
    suites = options.suite or claimed_suites(Path(options.manifest))
    steps = [
        *(
            [Step("suites", [*common, *(a for s in suites for a in ("--suite", s))])]
            if suites
            else []
        ),
        Step(
            f"level-{options.level}",
            [
                *common,
                "--level",
                str(options.level),
                *(a for op in options.op for a in ("--op", op)),
            ],
        ),
    ]
    names = ", ".join(suites) or "none claimed"
    spread = "in process" if workers == "0" else f"{workers} xdist worker(s)"
    _say(f"{count} {device} device(s), {spread}; suites: {names}")
    began = time.monotonic()
    for step in steps:
        left = options.budget_s - (time.monotonic() - began)
        if left < MIN_STEP_S:
            step.code, step.problem = SIGTERM_STATUS, "not started: budget spent"
            continue
        run_step(step, left, out, options.manifest)
    total = time.monotonic() - began
    lines = summary_lines(steps, total, options.budget_s, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-check.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for line in lines:
        _say(line)
    status = combined_status([s.code for s in steps if s.code is not None])
    if status in (OK, FAILED) and any(s.archive is None for s in steps):
        return INTERNAL
    return status


if __name__ == "__main__":
    sys.exit(main())
