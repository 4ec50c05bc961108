"""Probe results a rerun reuses instead of starting a probe interpreter.

A one-case rerun would otherwise pay for a second interpreter that imports torch and
the backend and runs every probe. The probes of a run are reused only by a subset run
of the same results directory whose key matches exactly: run key, device, torch,
TorchCTS, manifest digest, the backend's environment, and a fingerprint of the
backend's installed files (a rebuilt backend probes again). Only a table whose import
and device probes passed is kept, so a backend that could not start is always probed
afresh. The file is hidden, never shared, and written atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts_schema import JsonDict, ResultsLayout, write_atomic

from torchcts_runner import __version__
from torchcts_runner.device_environment import run_environment
from torchcts_runner.probes import (
    LocalProbes,
    PooledProbes,
    ProbeRun,
    format_table,
    probe_counts,
)
from torchcts_runner.settings import RunSettings

CACHE_FORMAT = "torchcts-probe-cache"
MAX_FINGERPRINT_FILES = 20_000


def backend_fingerprint(module: str | None) -> str:
    """A digest of the backend module's files (names, sizes, modification times),
    found without importing it; ``"none"`` without a module, ``"unknown"`` when it
    cannot be located (then the cache never matches a later lookup by accident)."""
    if not module:
        return "none"
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return "unknown"
    if spec is None:
        return "unknown"
    roots = list(spec.submodule_search_locations or [])
    files: list[Path] = []
    if roots:
        for root in roots:
            for folder, _dirs, names in os.walk(root):
                files.extend(Path(folder) / n for n in names)
                if len(files) > MAX_FINGERPRINT_FILES:
                    return "unknown"
    elif spec.origin:
        files.append(Path(spec.origin))
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


class ProbeCache:
    """The cached probe table of one run key in one results directory."""

    def __init__(self, results_dir: Path, run_key: str, key: JsonDict) -> None:
        self.path = ResultsLayout(results_dir, run_key).probe_cache
        self.key = key

    def read(self) -> list[JsonDict] | None:
        """The cached rows when the key matches exactly, else None."""
        try:
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return None
        rows = data.get("rows")
        if data.get("key") != self.key or not isinstance(rows, list):
            return None
        if not all(_is_row(r) for r in rows):
            return None
        return rows

    def write(self, rows: list[JsonDict]) -> None:
        """Keep `rows` for reruns when the backend imported and its device worked."""
        harness_failed = any(
            r.get("kind") == "harness" and r["status"] != "pass" for r in rows
        )
        if harness_failed or backend_unusable(rows):
            return
        payload = {"format": CACHE_FORMAT, "key": self.key, "rows": rows}
        # a cache that cannot be written costs the next rerun a probe run, no more
        with contextlib.suppress(OSError):
            write_atomic(self.path, json.dumps(payload, sort_keys=True) + "\n")


def _is_row(row: Any) -> bool:
    return isinstance(row, dict) and all(
        isinstance(row.get(k), str) for k in ("kind", "probe", "status", "note")
    )


class ReusedProbes:
    """A finished probe table read from the cache: `ProbeRun`'s interface, no child."""

    reused = True

    def __init__(self, rows: list[JsonDict]) -> None:
        self._rows = rows

    def start(self) -> None:
        """Nothing to start."""

    def result(self) -> list[JsonDict]:
        """The cached rows."""
        return list(self._rows)

    def kill(self) -> None:
        """Nothing runs."""


class ProbePhase:
    """This run's probes from start to printed table, fresh or reused."""

    def __init__(
        self,
        run: ProbeRun | LocalProbes | PooledProbes | ReusedProbes,
        cache: ProbeCache,
    ) -> None:
        self.run = run
        self.cache = cache

    def begin(self) -> None:
        """Start a probe child: the controller calls it as each case ends, so the
        child starts after the first, when the workers' start-up no longer shares
        the cores with it (later calls do nothing: `start` starts once)."""
        self.run.start()

    def kill(self) -> None:
        """Stop a probe child that is still running."""
        self.run.kill()

    def finish(self) -> tuple[list[JsonDict], str]:
        """The rows (a fresh full table is cached) and the table to print."""
        rows = self.run.result()
        reused = isinstance(self.run, ReusedProbes)
        if not reused:
            self.cache.write(rows)
        counts = probe_counts(rows)
        how = (
            ", reused from an earlier run with the same torch, manifest, environment "
            "and backend build"
            if reused
            else ""
        )
        head = f"TorchCTS probes ({counts['pass']}/{counts['total']} pass{how}):"
        return rows, "\n".join([head, *format_table(rows)])


def backend_unusable(rows: list[JsonDict]) -> bool:
    """Did the import or device probe fail (the run then ends with exit 6)?"""
    return any(
        row.get("kind") in ("import", "device") and row.get("status") == "fail"
        for row in rows
    )


def probe_phase(
    settings: RunSettings,
    run_key: str,
    torch_version: str,
    *,
    executes_here: bool,
    pooled: Callable[[], list[JsonDict] | str] | None = None,
) -> ProbePhase:
    """The probes of this run: reused for a subset run when the cache matches, else
    as a payload of the warm pool that runs every case (`pooled`, ``--isolate all``
    in process), else run in this process when it executes the cases (it has torch
    loaded anyway) and the device is torch's own (no backend import), else a fresh
    probe child, started by `ProbePhase.begin` (or at the latest by
    `ProbePhase.finish`). An xdist controller never imports torch: its workers do,
    and the child starts only once the first case has ended, off the path to it."""
    manifest = settings.manifest
    key = {
        "run_key": run_key,
        "device": settings.device,
        "torch": torch_version,
        "torchcts": __version__,
        "manifest": manifest.digest,
        "environment": run_environment(settings.device),
        "backend": backend_fingerprint(manifest.backend_import),
    }
    cache = ProbeCache(settings.results_root or settings.results_dir, run_key, key)
    cached = cache.read() if settings.is_subset else None
    if cached is not None:
        return ProbePhase(ReusedProbes(cached), cache)
    if pooled is not None:
        return ProbePhase(PooledProbes(pooled), cache)
    if executes_here and not manifest.backend_import:
        return ProbePhase(LocalProbes(manifest.path, settings.device), cache)
    return ProbePhase(ProbeRun(manifest.path, settings.device), cache)


__all__ = [
    "ProbeCache",
    "ProbePhase",
    "ReusedProbes",
    "backend_fingerprint",
    "backend_unusable",
    "probe_phase",
]
