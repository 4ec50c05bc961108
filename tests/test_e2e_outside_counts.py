"""End to end: a full run (no command-line filter) records what it ran and what the
manifest declines, and only counts the cases deeper than its level: no journal line,
no history row, no per-case work for them. The count equals the ids that
`torchcts-cases list --not-run level_filtered` lists from the index, and the
scorecard prints that command, which works as printed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from torchcts_schema import load_result

pytestmark = pytest.mark.timeout(600)
BIN = Path(sys.executable).parent
MANIFEST = """\
DEVICE = "cpu"
DTYPES = {"float32": True, "int64": True, "float64": False}
CAPABILITIES = ["forward", "method"]
LEVEL = 1
OPS = {"include": ["abs", "neg"]}
"""


def test_a_full_run_counts_cases_outside_its_level_without_recording_them(
    tmp_path: Path,
) -> None:
    """Level 1 of abs and neg: the runnable cases and the float64 declines are
    records; the deeper cases (of every op) are one count."""
    (tmp_path / "manifest.py").write_text(MANIFEST, encoding="utf-8")
    done = subprocess.run(
        [str(BIN / "torchcts-run"), "--manifest", "manifest.py", "-n", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=500,
        env=without_torchcts_env(),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = tmp_path / "results"
    artifact = load_result(results)
    reasons = {r.not_run_reason for r in artifact.records if r.not_run_reason}
    assert "level_filtered" not in reasons and "dtype_not_supported" in reasons
    (journal,) = results.glob("*_journal.jsonl")
    lines = [json.loads(x) for x in journal.read_text(encoding="utf-8").splitlines()]
    journaled = [x["record"] for x in lines if x.get("type") == "case"]
    assert journaled and all(
        r.get("not_run_reason") != "level_filtered" for r in journaled
    )
    (history,) = results.glob("*_history/*.json")
    # once: the key of metadata.outside, never a record's reason
    assert history.read_text(encoding="utf-8").count("level_filtered") == 1
    counted = artifact.metadata.outside.get("level_filtered", 0)
    listing = subprocess.run(
        [str(BIN / "torchcts-cases"), "list", "--manifest", "manifest.py",
         "--level", "1", "--not-run", "level_filtered"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    ids = listing.stdout.split()
    assert counted == len(ids) > 0
    # abs's and neg's deeper cases, and every other op's: above the level, a case
    # is outside the run before OPS.include is looked at
    assert {i.split("/")[1] for i in ids} > {"abs", "neg"}
    assert not set(ids) & {r.case_id for r in artifact.records}
    # the scorecard prints that command (bare tool name outside a checkout)
    (md,) = results.glob("*.md")
    text = md.read_text(encoding="utf-8")
    printed = [part.split("`")[0] for part in text.split("`torchcts-cases list ")[1:]]
    assert printed, "the scorecard names the listing command"
    again = subprocess.run(
        [str(BIN / "torchcts-cases"), "list", *shlex.split(printed[0])],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0 and again.stdout.split() == ids
    assert set(artifact.metadata.outside) == {"level_filtered"}
