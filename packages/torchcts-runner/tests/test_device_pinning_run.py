"""Device pinning and memory counters through a real xdist run: two workers on a
fake two-device backend each run on their own device, every case is synchronized,
and the metadata holds each worker's counters and the device family.

60-70 s on this shared 2-core machine: three interpreters import torch (the fake
backend is a torch device module): two workers and the probe."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_helpers import run_args, use_fake_source, write_manifest
from torchcts_schema import load_result


@pytest.mark.timeout(300)
def test_two_workers_on_two_devices_each_use_their_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gw0 -> device 0, gw1 -> device 1 (records, calls and counters agree); one
    synchronize per case, on the pinned device; the family is recorded."""
    use_fake_source(pytester, monkeypatch)
    log = pytester.path / "fakedev.log"
    monkeypatch.setenv("FAKEDEV_LOG", str(log))
    monkeypatch.setenv("FAKEDEV_COUNT", "2")
    manifest = write_manifest(pytester, ["ok"], MAX_SAMPLES_PER_OP=6)
    text = manifest.read_text().replace('"cpu"', '"fakedev"')
    manifest.write_text(text + 'BACKEND_IMPORT = "fakedevice"\n')
    result = pytester.runpytest_subprocess(*run_args(workers=2))
    assert result.ret == 0, result.stdout.str()
    artifact = load_result(Path(pytester.path / "results"))
    records = artifact.results
    assert len(records) == 6
    workers = {r.worker for r in records}
    assert workers == {"gw0", "gw1"}
    for record in records:
        assert record.extra["device_index"] == int(str(record.worker)[2:])
    calls = [line.split() for line in log.read_text().splitlines()]
    pinned = {pid: int(i) for pid, call, i in calls if call == "set_device"}
    assert sorted(pinned.values()) == [0, 1]
    syncs = [(pid, int(i)) for pid, call, i in calls if call == "synchronize"]
    assert len(syncs) == len(records)
    assert all(pinned[pid] == index for pid, index in syncs)
    options = artifact.metadata.options
    assert options["device_family"] == {"family": "privateuse1", "device": "fakedev"}
    assert options["device_memory"] == {
        "gw0": {"allocated_bytes": 1000, "peak_allocated_bytes": 5000},
        "gw1": {"allocated_bytes": 2000, "peak_allocated_bytes": 10000},
    }
