"""End to end: a simdev demo run, its submission archive, verify, backend evidence, and
the standalone repro of a segfault candidate.

Runs the commands `make run-simdev` and `make submission-archive` run (the installed
console scripts, without nox building its own environment) on a small selection that
still reaches the demo profile's segfault in exp.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# one real run (worker start-up, op_db import, a crashed worker replaced) takes minutes
pytestmark = pytest.mark.timeout(1200)
BIN = Path(sys.executable).parent
MANIFEST = '''"""simdev with the demo fault profile, narrowed for the end-to-end test."""
DEVICE = "simdev"
BACKEND_NAME = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "demo"}
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
LEVEL = 1
OPS = {"include": ["exp", "add"]}
'''


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=900, env=env
    )


def _evidence(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run([str(BIN / "torchcts-evidence"), *args], cwd)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project directory after a simdev demo run (crash included)."""
    root = tmp_path_factory.mktemp("e2e")
    (root / "manifests").mkdir()
    (root / "manifests" / "simdev.py").write_text(MANIFEST)
    command = [str(BIN / "torchcts-run"), "--manifest", "manifests/simdev.py"]
    done = _run([*command, "--results", "results"], root)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return root


def _segfaulted_case(project: Path) -> str:
    records = [
        json.loads(p.read_text()) for p in project.glob("results/*_crashes/*.json")
    ]
    cases = [r["case_id"] for r in records if r["crash"].get("signal") == "SIGSEGV"]
    assert cases, "the demo profile's exp segfault left no crash record"
    return str(cases[0])


def test_run_then_archive_then_verify(project: Path) -> None:
    """The archive of a real run verifies, shows the crash, and rebuilds byte-identical."""
    archived = _evidence("archive", "results", cwd=project)
    assert archived.returncode == 0, archived.stderr
    (zip_path,) = project.glob("torchcts-results-*.zip")
    verified = _evidence("verify", zip_path.name, cwd=project)
    assert verified.returncode == 0, verified.stdout
    assert f"crashed: {_segfaulted_case(project)} (SIGSEGV)" in verified.stdout
    assert "completed normally  True" in verified.stdout
    rebuilt = _evidence("archive", "results", "--out", "again", cwd=project)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (project / "again" / zip_path.name).read_bytes() == zip_path.read_bytes()


def test_run_packs_into_a_valid_backend_store(project: Path) -> None:
    """backend-pack of the run gives entries that the lint check accepts."""
    store = project / "evidence" / "backends"
    store.mkdir(parents=True)
    packed = _evidence(
        "backend-pack", "results", "--gate", "simdev:python", cwd=project
    )
    assert packed.returncode == 0, packed.stderr
    entries = [json.loads(x) for x in (store / "simdev.jsonl").read_text().splitlines()]
    assert any(e["result"] == "crashed" for e in entries)
    assert all("fault_profile=demo" in e["modifications"] for e in entries)
    checked = _evidence("backend-pack", "--check", cwd=project)
    assert checked.returncode == 0, checked.stdout


def test_segfault_candidate_repro_crashes_alone(project: Path, tmp_path: Path) -> None:
    """The candidate's repro script, copied out of the project, segfaults on its own."""
    case = _segfaulted_case(project)
    made = _evidence("crash-candidate", case, "--out", "cand", cwd=project)
    assert made.returncode == 0, made.stderr
    (packet_path,) = [
        p for p in (project / "cand").glob("*.json") if ".artifact." not in p.name
    ]
    packet = json.loads(packet_path.read_text())
    assert packet["crash"]["signal"] == "SIGSEGV"
    assert packet["node_id"] == "torchcts::" + case
    assert packet["repro_script"], "the runner recorded no repro script"
    assert (project / "cand" / packet["latest_artifact"]).exists()
    (repro,) = (project / "cand").glob("*.py")
    alone = tmp_path / repro.name
    shutil.copy(repro, alone)
    crashed = _run([sys.executable, alone.name], tmp_path)
    assert crashed.returncode == -signal.SIGSEGV, crashed.stdout + crashed.stderr
