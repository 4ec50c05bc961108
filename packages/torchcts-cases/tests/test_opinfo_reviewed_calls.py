"""OpInfo cases PyTorch's own tests make differently from a plain call, made the same
way here so CPU validation judges them instead of leaving them without a reference:
an error input rejected by returning ``NotImplemented``, an error input PyTorch's
review calls a legal call, and an out= call whose outputs go by schema name.
Each still fails a wrong device result."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torchcts_cases import (
    OracleUnavailable,
    RaisedError,
    get_case,
    opinfo_errors,
    prepare,
)
from torchcts_cases.opinfo_errors import device_expectation
from torchcts_cases.opinfo_marks import errors_marked_failing
from torchcts_cases.opinfo_source import find_op
from torchcts_cases.out_call import out_kwargs, out_names
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]
RunRepros = Callable[[Manifest, Sequence[str]], list[str]]  # conftest.run_repros


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """float32 and float16, every capability, level 8."""
    return make_manifest(
        DTYPES={"float32": True, "float16": True},
        CAPABILITIES=list(CAPABILITY_NAMES),
        LEVEL=8,
    )


@pytest.mark.parametrize("op", ["__rsub__", "__rmod__", "__rpow__"])
def test_a_returned_not_implemented_is_the_rejection(
    manifest: Manifest, op: str
) -> None:
    """``Tensor.__rsub__(2, 3)`` returns NotImplemented, which PyTorch's test_errors
    counts as the error OpInfo expects: CPU and device alike pass; a device that
    returned a value fails with "no exception"."""
    case = prepare(get_case(f"opinfo/{op}/error_inputs/-/0"), manifest)
    assert case.sample().input == 2 and case.sample().args == (3,)  # two numbers
    expected = case.reference()
    assert isinstance(expected, RaisedError) and expected.type_name == "Exception"
    observed = case.run_on("cpu")
    assert isinstance(observed, RaisedError)
    assert observed.type_name == "ReturnedNotImplemented"
    assert case.judge(expected, observed).ok
    answered = case.judge(expected, torch.tensor(1))
    assert not answered.ok and "no exception" in (answered.mismatch or "")


def test_the_marks_follow_pytorchs_own_review() -> None:
    """clamp_max and clamp_min mark TestCommon.test_errors an expected failure in
    torch 2.13 (on every device); cat does not; a mark for one accelerator alone
    (masked_scatter on MPS) does not count."""
    assert errors_marked_failing(find_op("clamp_max"))
    assert errors_marked_failing(find_op("clamp_min"))
    assert not errors_marked_failing(find_op("cat"))
    assert not errors_marked_failing(find_op("masked_scatter"))


@pytest.mark.parametrize(
    ("op", "want"), [("clamp_max", [1, 2, 2]), ("clamp_min", [2, 2, 3])]
)
def test_an_error_input_pytorch_calls_legal_is_judged_on_values(
    manifest: Manifest, op: str, want: list[int]
) -> None:
    """``clamp_max(tensor([1, 2, 3]), 2)``: OpInfo lists it as an error, PyTorch's
    review says the call is legal; the CPU's result (the clamp by hand) is the
    reference, the record says why, and a wrong device value fails."""
    case = prepare(get_case(f"opinfo/{op}/error_inputs/-/0"), manifest)
    expected = case.reference()
    assert isinstance(expected, torch.Tensor) and expected.tolist() == want
    verdict = case.judge(expected, case.run_on("cpu"))
    assert verdict.ok and "test_errors" in (verdict.note or "")
    wrong = case.judge(expected, torch.tensor([9, 9, 9]))
    assert not wrong.ok and "output" in (wrong.mismatch or "")
    assert case.saved_inputs() is None  # a capsule would lose the mark


def test_without_the_mark_a_silent_cpu_leaves_no_reference(
    manifest: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same input on an op PyTorch has not reviewed: OpInfo or the CPU is
    wrong, nobody said which, so there is no reference (never a pass)."""
    monkeypatch.setattr(opinfo_errors, "errors_marked_failing", lambda op: False)
    case = prepare(get_case("opinfo/clamp_max/error_inputs/-/0"), manifest)
    with pytest.raises(OracleUnavailable, match="CPU did not raise"):
        case.reference()


def test_outputs_of_an_aten_packet_go_by_schema_name() -> None:
    """``torch.ops.aten._batch_norm_with_update`` names its four outputs in the
    schema; ``torch.max`` (a Python binding) and a single output take ``out=``."""
    packet = torch.ops.aten._batch_norm_with_update
    names = ("out", "save_mean", "save_invstd", "reserve")
    assert out_names(packet, 4) == names
    assert out_names(torch.max, 2) is None
    assert out_names(torch.ops.aten.sin, 1) is None
    outs = tuple(torch.empty(1) for _ in names)
    assert out_kwargs(packet, outs) == dict(zip(names, outs, strict=True))
    assert out_kwargs(torch.max, outs[:2]) == {"out": outs[:2]}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_an_out_call_by_schema_name_is_judged(manifest: Manifest, dtype: str) -> None:
    """``_batch_norm_with_update`` out=: CPU's own call by name is the reference's
    twin and passes; an output left unwritten fails at that output."""
    case = prepare(get_case(f"opinfo/_batch_norm_with_update/out/{dtype}/0"), manifest)
    expected = case.reference()
    observed = case.run_on("cpu")
    assert case.judge(expected, observed).ok
    assert isinstance(observed, dict) and observed["returns_out"] is True
    outputs = list(observed["output"])
    outputs[1] = torch.zeros_like(outputs[1])  # save_mean never written
    broken = case.judge(expected, dict(observed, output=tuple(outputs)))
    assert not broken.ok and "output[1]" in (broken.mismatch or "")


def test_the_repro_of_an_out_call_by_name_runs(
    manifest: Manifest, run_repros: RunRepros
) -> None:
    """The standalone script makes the same call by name (on CPU it finds nothing)."""
    (source,) = run_repros(manifest, ["opinfo/_batch_norm_with_update/out/float32/0"])
    assert "'save_mean'" in source and "out=out" not in source


@pytest.mark.parametrize(
    ("sample", "cpu_type", "device_pattern"),
    [
        (1, "RuntimeError", "Dimension out of range"),
        (6, "RuntimeError", "non-negative"),
    ],
)
def test_an_error_opinfo_expects_per_device_is_judged_per_device(
    manifest: Manifest, sample: int, cpu_type: str, device_pattern: str
) -> None:
    """narrow_copy's CPU kernel checks dim and length itself; OpInfo's generator,
    asked for any other device (meta here), expects the generic narrow's errors. The
    device is judged against those, the record says so, and a device raising the
    CPU's error instead fails."""
    case = prepare(get_case(f"opinfo/narrow_copy/error_inputs/-/{sample}"), manifest)
    expected = case.reference()
    assert isinstance(expected, RaisedError) and expected.type_name == cpu_type
    assert device_pattern not in expected.message
    observed = case.run_on("meta")
    assert isinstance(observed, RaisedError) and device_pattern in observed.message
    verdict = case.judge(expected, observed)
    assert verdict.ok and "OpInfo expects another error" in (verdict.note or "")
    as_cpu = case.judge(expected, RaisedError(cpu_type, expected.message, expected.mro))
    assert not as_cpu.ok
    assert case.saved_inputs() is None  # a capsule would lose the device's error


def test_the_same_error_on_every_device_stays_the_cpus(manifest: Manifest) -> None:
    """cat's first error input is one error everywhere: no device expectation."""
    case = prepare(get_case("opinfo/cat/error_inputs/-/0"), manifest)
    expected = case.reference()
    assert isinstance(expected, RaisedError)
    assert device_expectation(case.op, 0, "meta", case.item(), expected) is None
