"""What a device run keeps of the sample and of the result: tensors OpInfo pins to the
CPU stay there, results come back with the device's strides, and legal-output cases
judge strides only where they are the op's contract. Observed on simdev (clean)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torchcts_simdev
from torchcts_cases import OracleUnavailable, get_case, prepare
from torchcts_cases import cpu_pinned as cpu_pinned_module
from torchcts_cases.cpu_pinned import cpu_pinned
from torchcts_cases.legal import judge_legal, strides_are_contract
from torchcts_cases.opinfo_source import find_op
from torchcts_cases.replay import capture, load
from torchcts_cases.tolerances import tolerance_for
from torchcts_cases.transfer import to_device, to_host
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    """Each test runs on the clean profile."""
    torchcts_simdev.configure("clean")
    yield


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """simdev, every capability, the dtypes these cases use."""
    return make_manifest(
        DEVICE="simdev",
        BACKEND_IMPORT="torchcts_simdev",
        DTYPES={"float32": True, "int32": True, "bool": True},
        CAPABILITIES=list(CAPABILITY_NAMES),
    )


def test_results_come_back_with_the_device_strides() -> None:
    """``.to("cpu")`` would make these contiguous; the copy keeps what the device
    returned, with the same values."""
    base = torch.arange(24.0).to("simdev")
    on_device = [
        base.as_strided((5,), (4,)),  # gaps
        base.as_strided((3, 2, 2), (1, 2, 3)),  # overlapping
        torch.arange(5.0).to("simdev")[:, None].expand(5, 3),  # stride 0
        torch.arange(24.0).view(4, 6).to(torch.complex64).to("simdev").conj()[:, ::2],
        torch.arange(24.0).view(6, 4).to("simdev").t(),  # dense: .to keeps these
    ]
    for tensor in on_device:
        host = to_host(tensor)
        assert host.device.type == "cpu" and host.stride() == tensor.stride()
        assert torch.equal(host.resolve_conj(), tensor.to("cpu").resolve_conj())
    gaps = to_host(torch.empty_strided((5,), (4,), device="simdev"))
    assert gaps.stride() == (4,)  # .to("cpu") gives (1,)


@pytest.mark.parametrize("device", ["cpu", "simdev"])
def test_inputs_keep_the_values_of_conjugate_and_negative_views(device: str) -> None:
    """A view is moved as a view of its moved base: its lazy conjugate and negative
    bits go with it (a conjugate view used to arrive holding its base's values, the
    conjugates of its own), and a real view of complex values (another dtype than
    its base) arrives as a copy of its values."""
    base = torch.tensor([[1 + 2j, 3 - 4j], [-5 + 0.5j, 6j]])
    views = [
        base.conj(),
        base.conj()[1:],
        base.conj().t(),
        base._neg_view(),
        base.conj().imag,  # a negative view of the real dtype
        torch.view_as_real(base),
    ]
    moved = to_device((base, views), device)
    moved_base, moved_views = moved
    for view, arrived in zip(views, moved_views, strict=True):
        assert arrived.device.type == device
        want = view.resolve_conj().resolve_neg()
        assert torch.equal(arrived.cpu().resolve_conj().resolve_neg(), want)
    for arrived in moved_views[:4]:  # same dtype: still views of the moved base
        assert arrived.is_conj() or arrived.is_neg()
        assert (
            arrived.untyped_storage().data_ptr()
            == moved_base.untyped_storage().data_ptr()
        )


def _judge(op: str, variant: str, expected: object, observed: object) -> str | None:
    case = SimpleNamespace(op=None, spec=SimpleNamespace(op=op, variant=variant))
    return judge_legal("metadata", case, expected, observed, tolerance_for)


def test_legal_outputs_judge_strides_only_where_they_are_contract() -> None:
    """empty_strided's strides, an in-place result's and rand_like's are contract;
    dropout's output and any gradient are the backend's choice."""
    wanted = torch.empty_strided((2, 5), (10, 2))
    other = torch.empty(2, 5)
    assert "strides" in str(_judge("empty_strided", "forward", wanted, other))
    assert "strides" in str(_judge("rand_like", "noncontiguous", wanted, other))
    assert "strides" in str(_judge("nn.functional.dropout", "inplace", wanted, other))
    assert _judge("nn.functional.dropout", "noncontiguous", wanted, other) is None
    grads = {"output": other, "grads": [torch.ones(2, 5).expand(2, 5)[:, :]]}
    expanded = {"output": other, "grads": [torch.ones(1, 5).expand(2, 5)]}
    assert _judge("nn.functional.dropout", "backward", expanded, grads) is None
    # shapes and dtypes stay judged everywhere
    assert "shape" in str(_judge("bernoulli", "forward", wanted, torch.empty(5, 2)))
    assert not strides_are_contract("bernoulli", "forward")
    assert strides_are_contract("uniform", "forward")  # uniform_ returns self


def test_opinfo_cpu_tensors_are_found_by_building_the_sample_for_meta(
    make_manifest: MakeManifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tensor_split's index tensor (position 1) is built on the CPU for any device;
    add's operands are not; a generator that cannot run on meta pins nothing, and
    the probe leaves the global RNGs as it found them."""
    cpu = make_manifest(DTYPES={"float32": True, "int32": True})

    def pinned(case_id: str) -> frozenset[int]:
        spec = get_case(case_id)
        item = prepare(spec, cpu).item()  # seeds the case's RNGs
        dtype = getattr(torch, spec.dtype) if spec.dtype else None
        state = torch.get_rng_state()
        found = cpu_pinned(
            find_op(spec.op), spec.variant, dtype, spec.sample or 0, item
        )
        assert torch.equal(torch.get_rng_state(), state), case_id
        return found

    assert pinned("opinfo/tensor_split/forward/int32/0") == {1}
    assert pinned("opinfo/tensor_split/forward/int32/3") == {1}  # a strided index view
    assert pinned("opinfo/add/forward/float32/0") == frozenset()

    # a generator that cannot build the sample on meta (one reading values with
    # .item()) pins nothing, and is not tried again for that op, variant and dtype
    def cannot(*args: object) -> None:
        raise OracleUnavailable("meta: .item() needs values")

    monkeypatch.setattr(cpu_pinned_module.opinfo_source, "nth_item_on", cannot)
    assert pinned("opinfo/addcdiv/forward/float32/0") == frozenset()
    assert ("addcdiv", "forward", "torch.float32") in cpu_pinned_module._FAILED


def test_the_meta_probe_is_input_preparation_not_the_devices_stage(
    manifest: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which tensors stay on the CPU is found while the inputs are prepared (the
    reference's stage), so its time (a first meta pass imported 1-2 s of PyTorch
    inside a device stage's limit) and a failure of it are the harness's: the run
    stage calls only the device."""
    calls: list[str] = []

    def probe(*args: object) -> None:
        calls.append("probe")
        raise RuntimeError("meta pass broke")

    monkeypatch.setattr(cpu_pinned_module.opinfo_source, "nth_item_on", probe)
    case = prepare(get_case("opinfo/tensor_split/forward/int32/0"), manifest)
    with pytest.raises(RuntimeError, match="meta pass broke"):
        case.reference()  # the prepare stage: a harness error, never the device's
    assert calls == ["probe"]

    monkeypatch.undo()
    case = prepare(get_case("opinfo/tensor_split/forward/int32/0"), manifest)
    expected = case.reference()
    found = cpu_pinned_module.cpu_pinned
    monkeypatch.setattr(
        "torchcts_cases.opinfo_case.cpu_pinned",
        lambda *a: calls.append("again") or found(*a),
    )
    assert case.judge(expected, case.run_on("simdev")).ok
    assert calls == ["probe"]  # found once, before the device's stage


@pytest.mark.parametrize(
    "case_id",
    [
        "opinfo/tensor_split/forward/int32/0",
        "opinfo/tensor_split/method/int32/3",
        "opinfo/tensor_split/noncontiguous/float32/2",
        "opinfo/tensor_split/backward/float32/0",
        # numbered among the samples NaN/Inf can go in; a copy of the sample runs
        "opinfo/tensor_split/nonfinite/float32/1",
    ],
)
def test_tensor_split_runs_on_the_device_with_its_index_on_the_cpu(
    case_id: str, manifest: Manifest
) -> None:
    """PyTorch requires tensor_indices_or_sections on the CPU: the case passes."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("simdev"))
    assert verdict.ok, verdict.mismatch


def test_pinned_positions_travel_in_the_capsule_and_the_repro(
    manifest: Manifest, tmp_path: Path
) -> None:
    """A rerun from saved inputs keeps the index on the CPU, and so does the
    standalone repro script (which then matches: exit 0)."""
    spec = get_case("opinfo/tensor_split/forward/int32/0")
    case = prepare(spec, manifest)
    data = capture(spec, case.op, case.item(), case.cpu_pinned())
    assert data is not None
    path = tmp_path / "capsule.pt"
    path.write_bytes(data)
    replay = load(path, spec.case_id)
    assert replay is not None and replay.pinned == frozenset({1})
    source = case.repro_source("simdev", "torchcts_simdev", {"fault_profile": "clean"})
    assert "CPU_PINNED = (1,)" in source
    script = tmp_path / "repro.py"
    script.write_text(source)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "the failure did not reproduce" in done.stdout
