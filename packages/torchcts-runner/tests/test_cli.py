"""torchcts-run: exit codes that treat case failures as data, the report line, and an
abnormal end (a GIL-holding hang ended by faulthandler's _exit(1)) that is not success."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(
    tmp_path: Path, ops: list[str], *extra: str
) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "m.py"
    manifest.write_text(
        f'DEVICE = "cpu"\nOPS = {{"include": {ops!r}}}\nRESOURCE_LIMITS = {{"case_timeout_s": 1}}\n'
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
               "--torchcts-case-source", "fakecases", "--quiet", *extra]  # fmt: skip
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("workers", ["0", "2"])
def test_failures_are_data_and_report_path_is_printed(
    tmp_path: Path, workers: str
) -> None:
    """A run with failing cases exits 0 and ends with the report path."""
    done = _run(tmp_path, ["ok", "wrong"], "-n", workers)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("torchcts-run: run complete; report: ") and last.endswith(
        ".md"
    )


def test_empty_selection_and_bad_manifest_fail(tmp_path: Path) -> None:
    """No cases collected is a failure; a missing manifest is one clear usage error."""
    empty = _run(tmp_path, ["ok"], "-n", "0", "-k", "nothing_matches")
    assert empty.returncode == 5
    missing = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "nope.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and "nope.py does not exist" in missing.stderr


def test_abnormal_end_is_not_success(tmp_path: Path) -> None:
    """A process ended by the GIL-hang backstop (exit 1) is reported as abnormal (3)."""
    done = _run(tmp_path, ["ok", "gilhang"], "-n", "0")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--resume" in done.stdout
