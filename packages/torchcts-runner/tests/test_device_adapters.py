"""Device adapters against fake ``torch.<device>`` modules (no GPU here), device
pinning with a fake device count, the MPS fallback default, and the generic
PrivateUse1 path on simdev for real."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from torchcts_runner.case_execution import CaseContext, execute_case
from torchcts_runner.casesource import load_case_source
from torchcts_runner.device_adapter import DeviceAdapter, HostAdapter, host_hardware_key
from torchcts_runner.device_environment import (
    prepare_environment,
    run_environment,
    runtime_modifications,
)
from torchcts_runner.device_families import (
    CudaAdapter,
    MpsAdapter,
    XpuAdapter,
    adapter_for,
)
from torchcts_runner.device_memory import MemoryTally
from torchcts_runner.device_pinning import device_index_for, pin_worker
from torchcts_schema import Manifest, NextFix, Status

H200 = 141_000_000_000  # bytes: the key rounds to 141 GB


class FakeDeviceModule:
    """What a ``torch.<device>`` module offers, with a log of the calls made."""

    def __init__(self, *, count: int = 1, available: bool = True, **extra: Any):
        self.count = count
        self.available = available
        self.calls: list[tuple[str, Any]] = []
        self.current = 0
        for name, value in extra.items():
            setattr(self, name, value)

    def is_available(self) -> bool:
        return self.available

    def device_count(self) -> int:
        self.calls.append(("device_count", None))
        return self.count

    def set_device(self, index: int) -> None:
        self.calls.append(("set_device", index))
        self.current = index

    def synchronize(self) -> None:
        self.calls.append(("synchronize", self.current))

    def get_device_properties(self, index: int) -> Any:
        return SimpleNamespace(name="NVIDIA H200", total_memory=H200)

    def memory_allocated(self) -> int:
        return 1024

    def max_memory_allocated(self) -> int:
        return 4096


def fake_torch(hip: str | None = None, **modules: Any) -> Any:
    """A torch with `modules` as its device modules and a version namespace."""
    version = SimpleNamespace(hip=hip, cuda=None if hip else "12.8")
    return SimpleNamespace(version=version, **modules)


class NoTorch:
    """A torch that fails on any use: the host adapter never needs it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"torch.{name} used")


def test_factory_picks_the_family_by_device_type() -> None:
    """Built-in types get their family; an index is dropped; any other type is an
    out-of-tree backend on the generic path."""
    cases = {
        "cpu": HostAdapter,
        "meta": HostAdapter,
        "cuda": CudaAdapter,
        "cuda:1": CudaAdapter,
        "mps": MpsAdapter,
        "xpu": XpuAdapter,
        "simdev": DeviceAdapter,
    }
    for device, kind in cases.items():
        adapter = adapter_for(device, NoTorch())
        assert type(adapter) is kind, device
    assert adapter_for("cuda:1", NoTorch()).device == "cuda"
    assert adapter_for("npu", NoTorch()).family == "privateuse1"


def test_cuda_adapter_synchronizes_reads_memory_and_keys_by_properties() -> None:
    """CUDA: synchronize and the counters go to torch.cuda; the key is the model and
    its memory; the metadata names the toolkit and the device count."""
    cuda = FakeDeviceModule(count=2)
    adapter = adapter_for("cuda", fake_torch(cuda=cuda))
    adapter.synchronize()
    assert ("synchronize", 0) in cuda.calls
    assert adapter.memory_stats() == {
        "allocated_bytes": 1024,
        "peak_allocated_bytes": 4096,
    }
    assert adapter.hardware_key() == "nvidia-h200-141gb"
    assert adapter.describe({}) == {
        "family": "cuda",
        "device": "cuda",
        "device_count": 2,
        "cuda_version": "12.8",
    }


def test_rocm_is_the_cuda_module_on_a_hip_build() -> None:
    """A HIP build of torch is recorded as family rocm with its HIP version."""
    adapter = adapter_for("cuda", fake_torch(hip="6.4", cuda=FakeDeviceModule()))
    described = adapter.describe({})
    assert (described["family"], described["hip_version"]) == ("rocm", "6.4")


def test_a_missing_gpu_keys_by_the_host() -> None:
    """torch.cuda without a device (the CPU wheel): ``no-cuda-<host key>``."""
    adapter = adapter_for("cuda", fake_torch(cuda=FakeDeviceModule(available=False)))
    assert adapter.hardware_key() == f"no-cuda-{host_hardware_key()}"
    assert adapter.describe({})["device_count"] == 0


def test_cuda_environment_is_recorded_and_labelled_never_set() -> None:
    """CUDA_LAUNCH_BLOCKING and TF32 overrides are recorded and labelled as runtime
    modifications; nothing is set; unrelated variables are left out. The visible
    devices go with the device description (not the environment --resume compares),
    a list of device UUIDs by its length only."""
    environ = {
        "CUDA_LAUNCH_BLOCKING": "1",
        "NVIDIA_TF32_OVERRIDE": "0",
        "CUDA_VISIBLE_DEVICES": "GPU-8a7c1e2f-aaaa,GPU-77b0c3d1-bbbb",
        "HOME": "/home/someone",
    }
    adapter = adapter_for("cuda", fake_torch(cuda=FakeDeviceModule()))
    before = dict(environ)
    adapter.prepare_environment(environ)
    assert environ == before
    assert adapter.environment(environ) == {
        "CUDA_LAUNCH_BLOCKING": "1",
        "NVIDIA_TF32_OVERRIDE": "0",
    }
    assert adapter.runtime_modifications(environ) == [
        "CUDA_LAUNCH_BLOCKING=1",
        "NVIDIA_TF32_OVERRIDE=0",
    ]
    visible = adapter.describe(environ)["visible_devices"]
    assert visible == {"CUDA_VISIBLE_DEVICES": "2 device id(s)"}
    indices = adapter.describe({"CUDA_VISIBLE_DEVICES": "0,1"})["visible_devices"]
    assert indices == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert "visible_devices" not in adapter.describe({})


def test_xpu_adapter_uses_torch_xpu_and_level_zero_variables() -> None:
    """XPU: counters and key from torch.xpu; ZE_AFFINITY_MASK recorded."""
    xpu = FakeDeviceModule()
    adapter = adapter_for("xpu", fake_torch(xpu=xpu))
    adapter.synchronize()
    assert xpu.calls == [("synchronize", 0)]
    assert adapter.memory_stats()["peak_allocated_bytes"] == 4096
    assert adapter.hardware_key() == "nvidia-h200-141gb"
    environ = {"ZE_AFFINITY_MASK": "0.1", "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}
    assert adapter.environment(environ) == {"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}
    assert adapter.describe(environ)["visible_devices"] == {"ZE_AFFINITY_MASK": "0.1"}


def test_mps_fallback_is_off_by_default_and_always_a_modification() -> None:
    """MPS: an unset PYTORCH_ENABLE_MPS_FALLBACK becomes 0; a user's 1 is kept; both
    are recorded and labelled as runtime modifications."""
    adapter = adapter_for("mps", NoTorch())
    environ: dict[str, str] = {}
    adapter.prepare_environment(environ)
    assert environ == {"PYTORCH_ENABLE_MPS_FALLBACK": "0"}
    assert adapter.runtime_modifications(environ) == ["PYTORCH_ENABLE_MPS_FALLBACK=0"]
    chosen = {"PYTORCH_ENABLE_MPS_FALLBACK": "1"}
    adapter.prepare_environment(chosen)
    assert adapter.runtime_modifications(chosen) == ["PYTORCH_ENABLE_MPS_FALLBACK=1"]


def test_mps_default_reaches_the_process_environment_and_the_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the controller does for an MPS run: the default lands in os.environ
    (inherited by workers and children) and in the recorded environment."""
    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # undone after the test
    prepare_environment("mps")
    assert os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] == "0"
    assert run_environment("mps")["PYTORCH_ENABLE_MPS_FALLBACK"] == "0"
    assert runtime_modifications("mps") == ["PYTORCH_ENABLE_MPS_FALLBACK=0"]
    prepare_environment("cuda")  # other families set nothing
    assert "CUDA_LAUNCH_BLOCKING" not in os.environ


def test_mps_counters_availability_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """MPS: allocated and driver bytes (no peak counter), availability from
    torch.backends.mps, the key from the chip and the machine's memory."""
    mps = SimpleNamespace(
        current_allocated_memory=lambda: 10, driver_allocated_memory=lambda: 20
    )
    backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: True))
    adapter = adapter_for("mps", fake_torch(mps=mps, backends=backends))
    assert adapter.is_available()
    assert adapter.memory_stats() == {
        "allocated_bytes": 10,
        "driver_allocated_bytes": 20,
    }
    answers = {"machdep.cpu.brand_string": "Apple M3 Max", "hw.memsize": str(128 << 30)}
    monkeypatch.setattr("torchcts_runner.device_families._sysctl", answers.get)
    assert adapter.hardware_key() == "apple-m3-max-128gb"


def test_host_adapter_never_touches_torch() -> None:
    """cpu and meta: nothing to wait for, no counters, the host's key."""
    for device in ("cpu", "meta"):
        adapter = adapter_for(device, NoTorch())
        adapter.synchronize()
        assert adapter.memory_stats() == {}
        assert adapter.hardware_key() == host_hardware_key()
        assert pin_worker(adapter, "gw5") is None
        assert adapter.environment({"ATEN_CPU_CAPABILITY": "avx2", "CPU_X": "1"}) == {
            "ATEN_CPU_CAPABILITY": "avx2"
        }


def test_generic_adapter_uses_the_backends_module_and_its_own_variables() -> None:
    """An out-of-tree backend: its module by its own name, its <NAME>_* variables,
    and the host's key whether or not its module is registered in this process
    (the controller never imports the backend); before it is registered, nothing
    to wait for."""
    npu = FakeDeviceModule()
    adapter = adapter_for("npu", fake_torch(npu=npu))
    adapter.synchronize()
    assert npu.calls == [("synchronize", 0)]
    assert adapter.memory_stats() == {
        "allocated_bytes": 1024,
        "peak_allocated_bytes": 4096,
    }
    assert adapter.hardware_key() == host_hardware_key()
    assert adapter.environment({"NPU_ASYNC": "0", "CUDA_LAUNCH_BLOCKING": "1"}) == {
        "NPU_ASYNC": "0"
    }
    bare = adapter_for("npu", fake_torch())
    bare.synchronize()
    assert bare.memory_stats() == {}
    assert bare.hardware_key() == host_hardware_key()
    assert bare.describe({}) == {"family": "privateuse1", "device": "npu"}


def test_a_counter_that_raises_is_left_out() -> None:
    """A broken device's counters are no evidence, and reading them never raises."""

    def broken() -> int:
        raise RuntimeError("device lost")

    cuda = FakeDeviceModule(max_memory_allocated=broken)
    assert adapter_for("cuda", fake_torch(cuda=cuda)).memory_stats() == {
        "allocated_bytes": 1024
    }


def test_device_index_is_the_worker_number_modulo_the_device_count() -> None:
    """gw<i> -> i mod count on several devices; one device or no worker: None."""
    assert [device_index_for(f"gw{i}", 4) for i in range(6)] == [0, 1, 2, 3, 0, 1]
    assert device_index_for("gw3", 1) is None
    assert device_index_for("gw3", 0) is None
    assert device_index_for("main", 4) is None
    assert device_index_for("gw1x", 4) is None


def test_pinning_sets_the_device_on_several_and_nothing_on_one() -> None:
    """A fake count of 3 pins gw4 to index 1; a single device is never set; a
    process that is no worker does not even ask for the count."""
    several = FakeDeviceModule(count=3)
    assert pin_worker(adapter_for("cuda", fake_torch(cuda=several)), "gw4") == 1
    assert ("set_device", 1) in several.calls
    one = FakeDeviceModule(count=1)
    assert pin_worker(adapter_for("cuda", fake_torch(cuda=one)), "gw4") is None
    assert [c for c, _ in one.calls] == ["device_count"]
    untouched = FakeDeviceModule(count=3)
    assert pin_worker(adapter_for("cuda", fake_torch(cuda=untouched)), "main") is None
    assert untouched.calls == []


def test_memory_tally_keeps_each_workers_largest_and_ignores_garbage() -> None:
    """Per worker id, the larger of each counter; a malformed report is ignored."""
    tally = MemoryTally()
    assert tally.as_option() is None
    tally.add("gw1", {"peak_allocated_bytes": 5, "allocated_bytes": 1})
    tally.add("gw1", {"peak_allocated_bytes": 3, "allocated_bytes": 2})
    tally.add("gw0", {"peak_allocated_bytes": True, "x": "y"})
    tally.add("gw2", ["not", "a", "table"])
    tally.add("main", {})
    assert tally.as_option() == {
        "gw1": {"allocated_bytes": 2, "peak_allocated_bytes": 5}
    }


# -- the adapter inside execute_case ------------------------------------------------


class LoggingAdapter(DeviceAdapter):
    """A device whose synchronize may raise (an asynchronous device error)."""

    def __init__(self, count: int = 1, sync_error: str = "", pin_error: str = ""):
        super().__init__("cpu", NoTorch())
        self.count, self.sync_error, self.pin_error = count, sync_error, pin_error
        self.calls: list[str] = []

    def synchronize(self) -> None:
        self.calls.append("synchronize")
        if self.sync_error:
            raise RuntimeError(self.sync_error)

    def device_count(self) -> int:
        return self.count

    def pin(self, index: int) -> None:
        if self.pin_error:
            raise RuntimeError(self.pin_error)
        self.calls.append(f"pin {index}")


def _context(adapter: DeviceAdapter, tmp_path: Path, worker: str) -> CaseContext:
    """One case context on the fake case source, with `adapter` as the device's."""
    manifest = Manifest(
        path=tmp_path / "m.py", digest="", device="cpu", backend_name="fake"
    )
    return CaseContext(
        manifest=manifest,
        source=load_case_source("fakecases"),
        device="cpu",
        results_dir=tmp_path,
        run_key="k",
        worker=worker,
        probe_after=False,
        adapter=adapter,
    )


def _execute(
    adapter: DeviceAdapter,
    tmp_path: Path,
    op: str = "ok",
    worker: str = "main",
    sample: int = 0,
    ctx: CaseContext | None = None,
) -> Any:
    ctx = ctx or _context(adapter, tmp_path, worker)
    return execute_case(ctx.source.get_case(f"fake/{op}/forward/float32/{sample}"), ctx)


def test_execute_case_synchronizes_before_judging(tmp_path: Path) -> None:
    """Every case that returned from the device is synchronized once before it is
    judged; one that raised there is not."""
    adapter = LoggingAdapter()
    assert _execute(adapter, tmp_path).status is Status.PASSED
    assert _execute(adapter, tmp_path, "wrong").status is Status.FAILED
    assert adapter.calls == ["synchronize", "synchronize"]
    assert _execute(adapter, tmp_path, "boom").status is Status.ERROR
    assert adapter.calls == ["synchronize", "synchronize"]


def test_an_asynchronous_device_error_is_the_cases_not_the_harness(
    tmp_path: Path,
) -> None:
    """An error the device raises at synchronize is the case's device error, with
    its message, never a harness problem while judging."""
    record = _execute(
        LoggingAdapter(sync_error="CUDA error: illegal address"), tmp_path
    )
    assert record.status is Status.ERROR
    assert record.exception_message == "CUDA error: illegal address"
    assert "judging" not in (record.detail or "")


def test_a_pinned_worker_records_its_device_index(tmp_path: Path) -> None:
    """gw5 among 2 devices runs on index 1, pinned once, and its records say so;
    a run without xdist pins nothing and records nothing."""
    adapter = LoggingAdapter(count=2)
    ctx = _context(adapter, tmp_path, "gw5")
    for sample in (0, 1):
        record = _execute(adapter, tmp_path, sample=sample, ctx=ctx)
        assert record.extra["device_index"] == 1
    assert adapter.calls.count("pin 1") == 1
    assert "device_index" not in _execute(LoggingAdapter(count=2), tmp_path).extra


def test_a_device_that_cannot_be_pinned_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    """set_device failing is the run's configuration problem, in one line."""
    adapter = LoggingAdapter(count=2, pin_error="invalid device ordinal")
    record = _execute(adapter, tmp_path, worker="gw1")
    assert record.status is Status.ERROR
    assert record.next_fix is NextFix.CONFIGURATION
    assert "pinning gw1 to its cpu device failed" in (record.detail or "")
    assert "invalid device ordinal" in (record.detail or "")


# -- simdev: the generic PrivateUse1 path for real ----------------------------------


def test_simdev_is_served_by_the_generic_privateuse1_adapter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """simdev registers itself as PrivateUse1 under its own name; its adapter finds
    the real torch.simdev, synchronizes through it, pins nothing (one device), reads
    simdev's payload counters and keys by the host, as simdev run keys always did."""
    import torch
    import torchcts_simdev  # noqa: F401  (registers torch.simdev)

    assert torch._C._get_privateuse1_backend_name() == "simdev"
    adapter = adapter_for("simdev")
    assert adapter.family == "privateuse1"
    assert adapter.module is torch.simdev
    calls: list[object] = []
    real = torch.simdev.synchronize
    monkeypatch.setattr(torch.simdev, "synchronize", lambda *a: calls.append(real(*a)))
    adapter.synchronize()
    assert calls == [None]
    assert adapter.device_count() == 1
    assert pin_worker(adapter, "gw3") is None
    # simdev counts its payloads (torch.simdev.memory_allocated and its peak)
    stats = adapter.memory_stats()
    assert set(stats) == {"allocated_bytes", "peak_allocated_bytes"}
    assert 0 <= stats["allocated_bytes"] <= stats["peak_allocated_bytes"]
    assert adapter.hardware_key() == host_hardware_key()
