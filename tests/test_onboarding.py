"""README "Test your own backend": its three commands, run as printed, end in a report.

The commands are read from the README itself, so the page and the tools cannot drift
apart. `bin/<tool>` is the root launcher of `.nox/torchcts/bin/<tool>`; here each runs
as ``python -m <module>`` of the checkout under test, in a fresh directory.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = {
    "bin/torchcts-cases": "torchcts_cases.cli",
    "bin/torchcts-run": "torchcts_runner.cli",
}
SUMMARY_KEYS = {
    "format",
    "version",
    "exit_code",
    "exit_meaning",
    "run_key",
    "complete",
    "interrupted_by",
    "backend_unusable",
    "write_error",
    "counts",
    "passed_via_cpu_fallback",
    "error",
    "results",
    "report",
    "history",
}


def _readme_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Test your own backend", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the section has no sh block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def _run(words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", MODULES[words[0]], *words[1:]]
    env = {**os.environ, "TORCHCTS_SIMDEV_PROFILE": "clean"}
    env.pop("TORCHCTS_USER_COMMAND", None)
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_readme_has_three_commands_init_check_run() -> None:
    """The section takes a backend from nothing to a report in exactly three commands."""
    commands = _readme_commands()
    assert [c[:2] for c in commands] == [
        ["bin/torchcts-cases", "init-manifest"],
        ["bin/torchcts-cases", "check-manifest"],
        ["bin/torchcts-run", "--manifest"],
    ]


def test_readme_commands_work_as_printed(tmp_path: Path) -> None:
    """init-manifest, check-manifest and a run of the written manifest give a report."""
    init, check, run = _readme_commands()
    done = _run(init, tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = tmp_path / init[init.index("-o") + 1]
    text = manifest.read_text(encoding="utf-8")
    assert "TEMPLATE" not in text.replace("`torchcts-cases init-manifest`", "")
    assert 'BACKEND_IMPORT = "torchcts_simdev"' in text and text.count("#") > 10
    again = _run(init, tmp_path)  # refuses to overwrite, in one line
    assert again.returncode == 2 and "exists" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    done = _run(check, tmp_path)
    assert done.returncode == 0, done.stderr
    assert ": ok (device 'simdev'" in done.stdout
    done = _run([*run, "-n", "0", "--json"], tmp_path)
    summary = json.loads(done.stdout)  # stdout holds the JSON object alone
    assert set(summary) == SUMMARY_KEYS
    assert summary["exit_code"] == done.returncode == 0, done.stderr[-2000:]
    assert summary["complete"] is True
    counts = summary["counts"]
    assert counts["passed"] > 0 and counts["passed"] + counts["not_run"] == sum(
        counts.values()
    )
    for key in ("results", "report", "history"):
        path = summary[key]
        assert not Path(path).is_absolute(), path
        assert (tmp_path / path).exists(), path
    assert summary["results"].startswith("results/selections/")
