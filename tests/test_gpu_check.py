"""tools/gpu-check.sh without a GPU: every step on simdev (two runs, their reports,
archives verified into the folder, the summary), and the one line it prints where
torch sees no CUDA device.

The end-to-end test is two real runs of the runner in process (a tiny selection:
``--suite factories`` and ``--op add``) plus two archives: 85-100 s on this shared
2-core machine, most of it torch and OpInfo imports.
"""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from e2e_env import without_torchcts_env
from script_module import load_script
from torchcts_evidence import verify_archive

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu-check.sh"


def _check_module() -> ModuleType:
    return load_script("tools/gpu_check.py")


def _script(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**without_torchcts_env(), "TORCHCTS_GPU_PYTHON": sys.executable}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_without_cuda_it_says_what_to_do_in_one_line(tmp_path: Path) -> None:
    """This machine's torch is the CPU wheel: one line naming torch.cuda.is_available()
    and what to install, exit 6 (the device is unusable), nothing written."""
    out = tmp_path / "out"
    done = _script(str(out), timeout=120)
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 6, done.stdout + done.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpu-check: torch.cuda.is_available() is False")
    assert "install a CUDA build of torch" in lines[0]
    assert not out.exists()


@pytest.mark.timeout(900)
def test_every_step_runs_on_a_substituted_device(tmp_path: Path) -> None:
    """With simdev in place of CUDA: both runs, their scorecards (md, html, junit),
    a verified archive per run in the folder, the summary with the elapsed time, and
    the runs' exit status (1: the demo profile's faults fail cases)."""
    out = tmp_path / "out"
    done = _script(
        str(out),
        "--manifest",
        "manifests/simdev.py",
        "--op",
        "add",
        "--suite",
        "factories",
        "--workers",
        "0",
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    for label, folder in (("suites", "suite-factories"), ("level-2", "op-add")):
        results = out / "results" / "selections" / folder
        for suffix in (".md", ".html", ".junit.xml"):
            assert len(list(results.glob(f"simdev_*{suffix}"))) == 1, (label, suffix)
        (archive,) = (out / label).glob("*.zip")
        assert verify_archive(archive).ok
        names = zipfile.ZipFile(archive).namelist()
        assert any(n.endswith(".md") for n in names)
    summary = (out / "gpu-check.txt").read_text()
    assert "suites: exit 1" in summary and "level-2: exit 1" in summary
    assert "elapsed" in summary and str(tmp_path) not in summary
    assert "gpu-check: elapsed" in done.stdout


def test_statuses_combine_as_torchcts_run_reads_them() -> None:
    """An abnormal end wins over failures, failures over passes."""
    check = _check_module()
    assert check.combined_status([0, 0]) == 0
    assert check.combined_status([0, 1]) == 1
    assert check.combined_status([1, 143]) == 143
    assert check.combined_status([5, 6]) == 5
    assert check.workers_for(2, 4) == 8
    assert check.workers_for(0, 4) == 4


def test_a_run_past_the_budget_is_stopped_with_sigterm() -> None:
    """The budget ends a run as a user's SIGTERM would: status 143, soon."""
    check = _check_module()
    began = time.monotonic()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    code, _ = check.run_within(sleeper, 1.0)
    assert code == 143
    assert time.monotonic() - began < 30
