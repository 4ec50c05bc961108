"""TorchCTS sessions: thin kebab-case entry points over one shared environment.

Every session runs in one virtual environment (``.nox/torchcts``) built once from
``constraints.txt`` (torch pinned to the CPU wheel) and every package installed
editable; it is rebuilt only when a requirements or package file changes. This keeps
``make test`` and ``make run`` from installing torch once per session.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
ENV = ROOT / ".nox" / "torchcts"
PACKAGES = ["schema", "isolate", "cases", "simdev", "runner", "report", "evidence"]
INPUTS = [
    ROOT / "constraints.txt",
    ROOT / "requirements-dev.txt",
    *(ROOT / "packages" / f"torchcts-{p}" / "pyproject.toml" for p in PACKAGES),
]
# device -> extra torchcts-run arguments; one table generates every run-<device> session
DEVICES: dict[str, list[str]] = {
    "cpu": ["--validation"],
    "meta": [],
    "simdev": [],
    "cuda": [],
    "mps": [],
    "xpu": [],
}

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "none"


def _bin(name: str) -> str:
    return str(ENV / "bin" / name)


def _ensure_env(session: nox.Session) -> None:
    """Create or refresh the shared environment when its inputs changed; compile the
    packages' sources either way (`_compile_sources`)."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in INPUTS)).hexdigest()
    stamp = ENV / ".inputs-sha256"
    if stamp.exists() and stamp.read_text() == digest and Path(_bin("python")).exists():
        _compile_sources(session)
        return
    session.run(sys.executable, "-m", "venv", "--clear", str(ENV), external=True)
    pip = [_bin("python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    session.run(
        *pip,
        "-c",
        "constraints.txt",
        "-r",
        "requirements-dev.txt",
        "torch==2.13.0",
        external=True,
    )
    editable = [arg for p in PACKAGES for arg in ("-e", f"packages/torchcts-{p}")]
    session.run(
        *pip, "--no-build-isolation", "-c", "constraints.txt", *editable, external=True
    )
    stamp.write_text(digest)
    _compile_sources(session)


def _compile_sources(session: nox.Session) -> None:
    """Write the bytecode of the editable packages (0.05 s when it is up to date).

    pip compiles what it installs, but editable packages are compiled at import and
    only where Python may write bytecode: with PYTHONDONTWRITEBYTECODE (common in
    containers) every process of a run compiled the torchcts sources again, 0.3-0.6 s
    each before its first case. A source newer than its bytecode is compiled at import
    as usual, so stale files cost nothing but time.
    """
    sources = [str(ROOT / "packages" / f"torchcts-{p}" / "src") for p in PACKAGES]
    compile_all = [_bin("python"), "-m", "compileall", "-q", *sources]
    # 1: some file could not be compiled or written; its import says why, if ever
    session.run(*compile_all, external=True, silent=True, success_codes=[0, 1])


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run every package's tests and the end-to-end tests (pytest, 2 workers)."""
    _ensure_env(session)
    # the slowest tests printed at the end: CI's whole run must stay under 20 minutes
    workers = os.environ.get("TORCHCTS_TEST_WORKERS", "2")
    args = session.posargs or ["-n", workers, "--durations=25"]
    session.run(_bin("pytest"), *args, external=True)


@nox.session(python=False)
def env(session: nox.Session) -> None:
    """Build the shared environment that the bin/torchcts-* launchers run, and stop."""
    _ensure_env(session)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff (lint and format check), mypy strict on src/, import directions and cycles, file names, evidence store."""
    _ensure_env(session)
    session.run(_bin("ruff"), "check", ".", external=True)
    session.run(_bin("ruff"), "format", "--check", ".", external=True)
    sources = [f"packages/torchcts-{p}/src" for p in PACKAGES]
    session.run(_bin("mypy"), *sources, external=True)
    session.run(_bin("python"), "tools/check_imports.py", external=True)
    session.run(_bin("python"), "tools/check_cycles.py", external=True)
    session.run(_bin("python"), "tools/check_names.py", external=True)
    if (ROOT / "tools" / "check_evidence.py").exists():
        session.run(_bin("python"), "tools/check_evidence.py", external=True)


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Print the benchmark table (-- NAME ... picks modules; --levels 1,2,4 adds level 4)."""
    _ensure_env(session)
    session.run(_bin("python"), "bench/run.py", *session.posargs, external=True)


@nox.session(python=False)
def soak(session: nox.Session) -> None:
    """Interrupt and resume simdev runs; compare with one uninterrupted run (-- --cycles 10 --seed 1)."""
    _ensure_env(session)
    session.run(_bin("python"), "bench/soak.py", *session.posargs, external=True)


def _torchcts_run(session: nox.Session, *args: str) -> None:
    """Run torchcts-run and leave with its exit status (README: exit status), so a
    CI job gates on the same codes whether it calls torchcts-run, nox or make.

    SIGINT reaches torchcts-run through the process group and a SIGTERM is passed
    on; this process waits for the partial report instead of dying first.
    """
    _ensure_env(session)
    proc = subprocess.Popen([_bin("torchcts-run"), *args])

    def forward(signum: int, frame: object) -> None:
        if signum == signal.SIGTERM and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, forward)
    code = proc.wait()
    if code:
        session.log(f"torchcts-run exited with status {code} (README: exit status)")
        sys.exit(code)  # nox would turn every failure into 1


def _run_device(session: nox.Session, device: str, extra: list[str]) -> None:
    manifest = ROOT / "manifests" / f"{device}.py"
    _torchcts_run(
        session, "--manifest", str(manifest.relative_to(ROOT)), *extra, *session.posargs
    )


for _device, _extra in DEVICES.items():

    def _session(
        session: nox.Session, device: str = _device, extra: list[str] = _extra
    ) -> None:
        _run_device(session, device, extra)

    _session.__doc__ = (
        f"Run the conformance suite on {_device} (manifests/{_device}.py)."
    )
    nox.session(python=False, name=f"run-{_device}")(_session)


@nox.session(python=False)
def run(session: nox.Session) -> None:
    """The main job: run on the best device this machine has, then render the report."""
    _torchcts_run(session, "--best-device", *session.posargs)


@nox.session(python=False)
def report(session: nox.Session) -> None:
    """Render <key>.md, .html and .junit.xml from results/ (or a given artifact)."""
    _ensure_env(session)
    session.run(
        _bin("torchcts-report"),
        "render",
        *(session.posargs or ["results"]),
        external=True,
    )


@nox.session(python=False, name="submission-archive")
def submission_archive(session: nox.Session) -> None:
    """Write torchcts-results-<UTC stamp>.zip from results/ and the run's manifest."""
    _ensure_env(session)
    session.run(
        _bin("torchcts-evidence"),
        "archive",
        *(session.posargs or ["results"]),
        external=True,
    )
