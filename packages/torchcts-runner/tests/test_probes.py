"""The capability probes at their simplest: the nonfinite probe on CPU and on meta;
where the probes run."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torchcts_runner import probe_cache
from torchcts_runner.child_entry import run_case
from torchcts_runner.probes import (
    PROBES_KIND,
    LocalProbes,
    PooledProbes,
    ProbeRun,
    _capability_checks,
    dtype_round_trip,
)
from torchcts_schema import load_manifest


@pytest.mark.parametrize(("device", "meta"), [("cpu", False), ("meta", True)])
def test_the_nonfinite_probe_passes_where_nan_and_inf_survive(
    device: str, meta: bool
) -> None:
    """NaN and +-Inf times 2 stay NaN and +-Inf on CPU; meta only checks the shape."""
    assert _capability_checks(torch, device, meta)["nonfinite"]() is None


def test_the_nonfinite_probe_names_a_device_that_flushes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A copy to the device that turns NaN into 0 is reported with the values."""
    real = torch.Tensor.to
    monkeypatch.setattr(
        torch.Tensor, "to", lambda self, *a, **k: real(self, *a, **k).nan_to_num(0.0)
    )
    problem = _capability_checks(torch, "cpu", False)["nonfinite"]()
    assert problem is not None and "NaN and Inf times 2 gave [0.0" in problem


NO_CPU_ADD = [torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint64]


@pytest.mark.parametrize("dtype", NO_CPU_ADD, ids=str)
def test_the_dtype_probe_judges_the_device_not_the_host(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU can neither add nor compare some dtypes (float8 has no ``equal``,
    uint16-64 no ``add``). On the CPU itself the probe fails at the device's add;
    a device that adds them (the CPU's add patched to compute in float64) passes,
    and one whose add is off by one fails: the host's gaps never decide."""
    with pytest.raises(NotImplementedError, match="add_stub"):  # a failed probe row
        dtype_round_trip(torch, "cpu", dtype, False)
    real_add = torch.Tensor.__add__

    def add(self: torch.Tensor, other: torch.Tensor, bump: float = 0.0) -> object:
        if self.dtype in NO_CPU_ADD:
            return (self.double() + other.double() + bump).to(self.dtype)
        return real_add(self, other)

    monkeypatch.setattr(torch.Tensor, "__add__", add)
    assert dtype_round_trip(torch, "cpu", dtype, False) is None
    monkeypatch.setattr(torch.Tensor, "__add__", lambda a, b: add(a, b, bump=2.0))
    wrong = dtype_round_trip(torch, "cpu", dtype, False)
    assert wrong == "create, copy and add gave wrong values"


CPU_MANIFEST = (
    'DEVICE = "cpu"\nDTYPES = {"float32": True, "uint16": True}\n'
    'CAPABILITIES = ["forward", "backward", "rng", "serialization"]\n'
)


def test_probes_in_process_match_the_probe_child(tmp_path: Path) -> None:
    """On a device torch provides, the rows run here are the rows a probe child
    prints (uint16 add fails in both), and the CPU generator is left as it was."""
    manifest = tmp_path / "manifest.py"
    manifest.write_text(CPU_MANIFEST)
    child = ProbeRun(manifest, "cpu")
    torch.manual_seed(1234)
    before = torch.random.get_rng_state()
    here = LocalProbes(manifest, "cpu").result()
    assert torch.equal(torch.random.get_rng_state(), before)
    assert here == child.result()
    assert [r["status"] for r in here if r["probe"].startswith("uint16")] == ["fail"]


def test_probes_run_here_only_in_an_executing_process_without_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that runs the cases probes a device torch provides itself; one with
    a backend to import gets a child (a crashing backend must not take the run with
    it), and so does an xdist controller, which never imports torch."""
    started: list[str] = []
    monkeypatch.setattr(probe_cache, "LocalProbes", lambda m, d: started.append("here"))
    monkeypatch.setattr(probe_cache, "ProbeRun", lambda m, d: started.append("child"))
    monkeypatch.setattr(probe_cache, "PooledProbes", lambda run: started.append("pool"))
    for backend, executes_here, pooled in (
        ("", True, None),
        ('BACKEND_IMPORT = "torchcts_simdev"\n', True, None),
        ("", False, None),
        ('BACKEND_IMPORT = "torchcts_simdev"\n', False, lambda: []),
    ):
        path = tmp_path / "manifest.py"
        path.write_text(backend + CPU_MANIFEST)
        settings = SimpleNamespace(
            manifest=load_manifest(path),
            device="cpu",
            results_root=None,
            results_dir=tmp_path,
            is_subset=False,
        )
        probe_cache.probe_phase(
            settings,  # type: ignore[arg-type]
            "cpu_x",
            torch.__version__,
            executes_here=executes_here,
            pooled=pooled,
        )
    assert started == ["here", "child", "child", "pool"]


def test_the_warm_pools_child_probes_as_the_process_does(tmp_path: Path) -> None:
    """--isolate all: the probes are one payload of the warm pool, whose child has
    torch and the backend loaded; its rows are the in-process rows, the generator is
    left as it was, and a payload that did not return is one failed probe row."""
    manifest = tmp_path / "manifest.py"
    manifest.write_text(CPU_MANIFEST)
    torch.manual_seed(99)
    before = torch.random.get_rng_state()
    payload = {"kind": PROBES_KIND, "manifest": str(manifest), "device": "cpu"}
    rows = run_case(payload)["probe_rows"]
    assert torch.equal(torch.random.get_rng_state(), before)
    assert rows == LocalProbes(manifest, "cpu").result()
    asked: list[int] = []
    pooled = PooledProbes(lambda: asked.append(1) or rows)
    pooled.start()
    assert pooled.result() == rows and asked == [1]  # run once, when begun
    (failed,) = PooledProbes(lambda: "the child was killed by SIGSEGV").result()
    assert failed["status"] == "fail" and "SIGSEGV" in failed["note"]


def test_the_probe_child_starts_when_asked_and_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making the probe phase starts no interpreter (the workers import torch
    first); `begin` starts the child once; `finish` reads the one child's table."""
    from torchcts_runner import probes

    started: list[list[str]] = []

    class Child:
        returncode = 0

        def __init__(self, command: list[str], **kwargs: object) -> None:
            started.append(command)

        def communicate(self, timeout: float | None = None) -> tuple[str, str]:
            row = {"kind": "import", "probe": "backend x", "status": "pass"}
            return json.dumps([{**row, "note": ""}]) + "\n", ""

    monkeypatch.setattr(probes.subprocess, "Popen", Child)
    path = tmp_path / "manifest.py"
    path.write_text('BACKEND_IMPORT = "torchcts_simdev"\n' + CPU_MANIFEST)
    settings = SimpleNamespace(
        manifest=load_manifest(path),
        device="cpu",
        results_root=None,
        results_dir=tmp_path,
        is_subset=False,
    )
    phase = probe_cache.probe_phase(
        settings,  # type: ignore[arg-type]
        "cpu_x",
        torch.__version__,
        executes_here=False,
    )
    assert started == []
    phase.begin()
    phase.begin()
    rows, _table = phase.finish()
    assert len(started) == 1 and started[0][1:3] == ["-m", "torchcts_runner.probes"]
    assert [r["probe"] for r in rows] == ["backend x"]
