"""Helpers for the runner's tests: write a fake manifest and run the plugin."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import CaseRecord, load_result, read_journal

HERE = Path(__file__).parent


def write_manifest(pytester: pytest.Pytester, ops: list[str], **extra: Any) -> Path:
    """A manifest for the fake case source with `ops` (names say how they behave)."""
    lines = ['DEVICE = "cpu"', 'BACKEND_NAME = "fake"', f"OPS = {{'include': {ops!r}}}"]
    lines += [f"{key} = {value!r}" for key, value in extra.items()]
    path = pytester.path / "manifest.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def use_fake_source(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the fake case source importable in pytester runs and xdist workers."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.syspath_prepend(str(HERE))


def run_args(*extra: str, workers: int = 0) -> list[str]:
    """pytest arguments of a fake run, with or without xdist."""
    args = ["--torchcts-manifest", "manifest.py", "--torchcts-case-source", "fakecases",
            "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--torchcts-quiet", *extra]  # fmt: skip
    if workers:
        args += ["-n", str(workers)]
    return args


def subset_results(results: Path) -> Path:
    """The one results folder a subset run (--op, -k, node ids) wrote under `results`."""
    (folder,) = (results / "selections").iterdir()
    return folder


def journal_records(results: Path) -> dict[str, CaseRecord]:
    """The last record per case in the only journal under `results`."""
    (journal,) = results.glob("*_journal.jsonl")
    return read_journal(journal).records


def artifact_records(results: Path) -> dict[str, CaseRecord]:
    """Every record of the loaded result (the history after a complete run)."""
    return {r.case_id: r for r in load_result(results).records}
