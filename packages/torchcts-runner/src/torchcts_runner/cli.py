"""``torchcts-run``: drive pytest with the TorchCTS plugin, xdist and pytest-timeout.

``torchcts-run --manifest FILE [pytest args]`` or ``torchcts-run --best-device``.
Device runs treat case failures as data: pytest's exit 0 (all passed) and 1 (some
cases did not pass) are success; usage errors, internal errors, an interrupted run and
an empty collection are failures with pytest's own exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ACCELERATORS = ("cuda", "mps", "xpu")
SUCCESS = (0, 1)  # pytest: all passed / some tests failed
ABNORMAL = 3  # pytest said 0 or 1 but never reached its session end (killed)


def default_workers(device: str, cores: int | None = None) -> int:
    """One worker per accelerator process; one per core for host-CPU devices.

    A single worker still runs in its own process, so a crash cannot take the run.
    """
    if device in ACCELERATORS:
        return 1
    return max(1, min(cores or os.cpu_count() or 1, 8))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchcts-run",
        description="Run the TorchCTS conformance cases a manifest selects. Other "
        "arguments go to pytest (e.g. --level 2, --dtype float32, --op 'add*', "
        "-k expr, --resume, --shard 1/4, --isolate all, torchcts::<case id>).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--manifest", type=Path, help="the manifest.py to run")
    where.add_argument(
        "--best-device",
        action="store_true",
        help="pick cuda > mps > xpu > simdev (demo faults) and its manifests/<device>.py",
    )
    parser.add_argument("-n", "--numprocesses", dest="workers", default=None,
                        help="xdist workers (default: 1 on an accelerator, cores otherwise; 0: no xdist)")  # fmt: skip
    parser.add_argument("--results", default="results", help="results directory")
    parser.add_argument("--quiet", action="store_true", help="plain progress lines")
    return parser


def build_pytest_args(manifest: Path, device: str, workers: str | None, results: str,
                      quiet: bool, passthrough: list[str]) -> list[str]:  # fmt: skip
    """The pytest command line of a device run."""
    if workers is None:
        workers = str(default_workers(device))
    args = [
        "--torchcts-manifest", str(manifest), "--torchcts-results", results,
        "-o", "addopts=", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
        "--assert=plain",  # cases never use assert: skip rewriting every plugin module
        "-p", "no:logging",  # per-case log capture costs ~1 ms; records carry messages
        "-n", workers, "--max-worker-restart", "1000000",
    ]  # fmt: skip
    if quiet:
        args.append("--torchcts-quiet")
    return [*args, *passthrough]


def _manifest_facts(path: Path) -> tuple[str, int | None]:
    """The device and the manifest's worker count (RESOURCE_LIMITS.workers)."""
    from torchcts_schema import load_manifest

    manifest = load_manifest(path)
    workers = manifest.resource_limits.get("workers")
    return manifest.device, int(workers) if workers else None


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``torchcts-run``."""
    parser = _parser()
    options, passthrough = parser.parse_known_args(argv)
    if options.best_device:
        from torchcts_runner.hardware import best_device

        device, why = best_device()
        manifest = Path("manifests") / f"{device}.py"
        print(f"torchcts-run: {why} ({manifest.as_posix()})", flush=True)
        if device == "simdev":
            os.environ.setdefault("TORCHCTS_SIMDEV_PROFILE", "demo")
    else:
        manifest = options.manifest
    if not manifest.is_file():
        parser.error(f"manifest {manifest} does not exist")
    try:
        device, manifest_workers = _manifest_facts(manifest)
    except Exception as exc:  # a bad manifest is one clear line, not a traceback
        parser.error(str(exc))
    workers = options.workers
    if workers is None and manifest_workers is not None:
        workers = str(manifest_workers)
    args = build_pytest_args(
        manifest, device, workers, options.results, options.quiet, passthrough
    )
    return run_pytest(args)


def run_pytest(args: list[str]) -> int:
    """Run pytest in a child process and judge how the run ended.

    A child, because a hang that holds the GIL can only be ended by faulthandler's
    ``_exit(1)``, which would look like "some cases failed" from inside; the status
    file the plugin writes at a normal session end tells the two apart.
    """
    with tempfile.TemporaryDirectory(prefix="torchcts-run-") as tmp:
        status_file = Path(tmp) / "status.json"
        command = [
            sys.executable,
            "-m",
            "pytest",
            *args,
            "--torchcts-status-file",
            str(status_file),
        ]
        code = subprocess.call(command)
        status = _read_status(status_file)
    if status is None:
        if code in SUCCESS:
            print("torchcts-run: the run ended abnormally (no session end); the journal "
                  "keeps every finished case: continue with --resume", flush=True)  # fmt: skip
            return ABNORMAL
        return code
    state = (
        "complete" if status.get("complete") else "incomplete (continue with --resume)"
    )
    print(f"torchcts-run: run {state}; report: {status.get('report')}", flush=True)
    return 0 if code in SUCCESS else code


def _read_status(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


if __name__ == "__main__":
    sys.exit(main())
