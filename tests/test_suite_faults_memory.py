"""simdev faults in the memory suite's territory fail the right case, with a mismatch
naming what broke and the numbers; the clean simdev passes every memory case its
manifest claims.

Each device run happens under the manifest's memory_mb cap, as the runner applies it
(torchcts_isolate.memory_limit): simdev's memory is the host's, so that cap is what
the out-of-memory case exceeds. One run goes through torchcts-run end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from suite_faults_helpers import clean_simdev, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import Manifest, Status, load_manifest, load_result

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CLAIMED = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if c.suite == "memory" and c.level < 7  # level 7 holds 2 GiB for ~25 s
)


def _capped(case_id: str, manifest: Manifest, *rules: dict[str, object]) -> str:
    """simdev_mismatch under the manifest's memory_mb cap, as the runner applies it."""
    return simdev_mismatch(case_id, manifest, *rules, memory_capped=True)


UNCOUNTED_FREE = {"op": "simdev::memory_allocated", "fault": "uncounted_free"}


@pytest.fixture
def manifest() -> Manifest:
    """manifests/simdev.py: it claims memory, memory_stats and oom, memory_mb 4096."""
    return load_manifest(ROOT / "manifests" / "simdev.py")


def test_the_simdev_manifest_claims_the_memory_suite(manifest: Manifest) -> None:
    """Every memory case is claimed on simdev (its statistics and its OOM)."""
    assert {all_hand_cases()[c].capability for c in CLAIMED} <= set(
        manifest.capabilities
    )


@pytest.mark.parametrize("case_id", CLAIMED)
def test_clean_simdev_passes_the_memory_suite(case_id: str, manifest: Manifest) -> None:
    """Without faults simdev's statistics, OOM and large tensors are right."""
    assert _capped(case_id, manifest) == ""


def test_uncounted_free_fails_only_memory_allocated_tracks(manifest: Manifest) -> None:
    """Statistics that miss frees fail memory_allocated_tracks, naming the bytes
    still counted; the peak and empty_cache cases cannot see it and pass."""
    found = {cid: _capped(cid, manifest, UNCOUNTED_FREE) for cid in CLAIMED}
    assert found.pop("memory/memory_allocated_tracks/check/-/-") == (
        "memory_allocated_tracks.counts_free: expected bool True, got str "
        "'memory_allocated still 4194304 above its start after the 4194304-byte "
        "tensor was freed; expected <= 0'"
    )
    assert found == dict.fromkeys(found, "")


def test_allocator_error_instead_of_oom_fails_out_of_memory(
    manifest: Manifest,
) -> None:
    """An allocator that fails a huge request with a plain device error, not
    torch.OutOfMemoryError, fails out_of_memory, naming the size and the error."""
    found = _capped(
        "memory/out_of_memory/check/-/-",
        manifest,
        {"op": "aten::empty.memory_format", "dtype": "uint8", "fault": "runtime_error"},
    )
    assert found.startswith(
        "out_of_memory.raises_out_of_memory: expected bool True, got str "
        "'torch.empty(5368709120 bytes: memory_mb 4096 MiB + 1 GiB) raised "
        "RuntimeError, not torch.OutOfMemoryError: simdev kernel failed"
    )


def test_memory_run_end_to_end(tmp_path: Path) -> None:
    """torchcts-run applies memory_mb to the device run (out_of_memory passes on
    simdev) and records the injected statistics fault as a failure with its text."""
    (tmp_path / "profile.json").write_text(json.dumps({"rules": [UNCOUNTED_FREE]}))
    source = (ROOT / "manifests" / "simdev.py").read_text()
    demo = 'BACKEND_OPTIONS = {"fault_profile": "demo"}'
    assert demo in source
    mine = source.replace(demo, 'BACKEND_OPTIONS = {"fault_profile": "profile.json"}')
    (tmp_path / "manifest.py").write_text(mine)
    nodes = [
        "torchcts::memory/out_of_memory/check/-/-",
        "torchcts::memory/memory_allocated_tracks/check/-/-",
    ]
    command = [str(BIN / "torchcts-run"), "--manifest", "manifest.py", "-n", "0"]
    command += ["--isolate", "none", "--quiet", "--level", "3", "--suite", "memory"]
    done = subprocess.run(
        [*command, *nodes],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (folder,) = (tmp_path / "results" / "selections").iterdir()
    records = {r.op: r for r in load_result(folder).results}
    assert records["out_of_memory"].status is Status.PASSED
    tracks = records["memory_allocated_tracks"]
    assert tracks.status is Status.FAILED
    assert "memory_allocated still 4194304 above its start" in (tracks.mismatch or "")
