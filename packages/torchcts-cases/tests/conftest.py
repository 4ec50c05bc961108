"""Shared helpers: manifests written from keyword arguments."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import Manifest, load_manifest


def manifest_text(**keys: Any) -> str:
    """Manifest source with the given NAME = value assignments."""
    keys.setdefault("DEVICE", "cpu")
    return "".join(f"{name} = {value!r}\n" for name, value in keys.items())


@pytest.fixture
def make_manifest(tmp_path: Path) -> Callable[..., Manifest]:
    """Write a manifest from keyword arguments and load it."""

    def make(**keys: Any) -> Manifest:
        path = tmp_path / "manifest.py"
        path.write_text(manifest_text(**keys), encoding="utf-8")
        return load_manifest(path)

    return make


RunRepros = Callable[[Manifest, Sequence[str]], list[str]]


@pytest.fixture
def run_repros(tmp_path: Path) -> RunRepros:
    """Write each case's CPU repro script and run them all in one isolated
    interpreter (torch imports once; -I ignores PYTHONPATH, so a script that needs
    TorchCTS fails): every one must exit cleanly, finding nothing to reproduce on
    CPU itself. Returns the scripts' sources for further checks."""

    def run(manifest: Manifest, case_ids: Sequence[str]) -> list[str]:
        from torchcts_cases import get_case, prepare

        sources, scripts = [], []
        for n, case_id in enumerate(case_ids):
            source = prepare(get_case(case_id), manifest).repro_source("cpu", None, {})
            assert "torchcts" not in source.replace(f"TorchCTS case {case_id}", "")
            sources.append(source)
            scripts.append(tmp_path / f"repro{n}.py")
            scripts[-1].write_text(source)
        runner = (
            "import runpy, sys\n"
            "for p in sys.argv[1:]:\n"
            "    runpy.run_path(p, run_name='__main__')"
        )
        done = subprocess.run(
            [sys.executable, "-I", "-c", runner, *map(str, scripts)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert done.stdout.count("the failure did not reproduce") == len(case_ids)
        return sources

    return run
