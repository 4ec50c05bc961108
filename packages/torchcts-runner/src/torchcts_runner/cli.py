"""``torchcts-run``: drive pytest with the TorchCTS plugin, xdist and pytest-timeout.

``torchcts-run --manifest FILE [pytest args]`` or ``torchcts-run --best-device``.
Device runs treat case failures as data: pytest's exit 0 (all passed) and 1 (some
cases did not pass) are success; usage errors, internal errors, an interrupted run and
an empty collection are failures with pytest's own exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from torchcts_runner.outputs import LAST_RUN

ACCELERATORS = ("cuda", "mps", "xpu")
SUCCESS = (0, 1)  # pytest: all passed / some tests failed


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
        "-n", workers, "--max-worker-restart", "1000000",
        # this process imported torchcts_runner before pytest could rewrite it
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
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
    import pytest

    workers = options.workers
    if workers is None and manifest_workers is not None:
        workers = str(manifest_workers)
    args = build_pytest_args(
        manifest, device, workers, options.results, options.quiet, passthrough
    )
    code = int(pytest.main(args))
    report = LAST_RUN.get("report")
    if report is not None:
        state = "complete" if LAST_RUN.get("complete") else "incomplete (use --resume)"
        print(f"torchcts-run: run {state}; report: {report}", flush=True)
    return 0 if code in SUCCESS else code


if __name__ == "__main__":
    sys.exit(main())
