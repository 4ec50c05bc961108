"""Reviewed upstream defects: where PyTorch's CPU disagrees with itself on a sample,
the reviewed reference judges what is still defined, names the defect, and still fails
a wrong result; where CPU agrees, values are judged as always."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode
from torchcts_cases import get_case, prepare
from torchcts_cases.dispatch_recorder import RouteRecorder
from torchcts_cases.fallback_watch import route_recorder_off
from torchcts_cases.upstream_defects import (
    DEFECTS,
    MODE_DEFECTS,
    cpu_disagrees,
    defect_for,
    mode_defect_for,
    out_metadata_mismatch,
)
from torchcts_schema import Manifest

MakeManifest = Callable[..., Manifest]


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """float64 with out= at level 8."""
    return make_manifest(DTYPES={"float64": True}, CAPABILITIES=["out"], LEVEL=8)


def _ihfftn_one_dim_out_is_broken() -> bool:
    x = torch.arange(8, dtype=torch.float64)
    out = torch.full((5,), 7.0 + 7.0j, dtype=torch.complex128)
    torch.fft.ihfftn(x, out=out)
    return not torch.allclose(out, torch.fft.ihfft(x))


def test_the_defect_reproduces_on_the_installed_torch() -> None:
    """The entry describes a defect this torch still has (ihfft, its 1-D twin, is
    the independent expectation); when a torch release fixes it, this fails and the
    entry is removed."""
    assert _ihfftn_one_dim_out_is_broken()


def test_a_sample_showing_the_defect_is_judged_on_metadata_and_names_it(
    manifest: Manifest,
) -> None:
    """Sample 3 is a 1-D input: CPU's out= leaves out unwritten; the case passes on
    CPU with the defect's note, and a wrong dtype or a lost out still fails."""
    case = prepare(get_case("opinfo/fft.ihfftn/out/float64/3"), manifest)
    expected = case.reference()
    observed = case.run_on("cpu")
    verdict = case.judge(expected, observed)
    assert verdict.ok and verdict.note is not None
    assert "ihfftn-out-one-dim" in verdict.note and "values not judged" in verdict.note
    wrong = dict(observed, output=observed["output"].to(torch.complex64))
    assert not case.judge(expected, wrong).ok
    lost = dict(observed, returns_out=False)
    assert "returns_out" in (case.judge(expected, lost).mismatch or "")


def test_a_sample_without_the_defect_is_judged_on_values(manifest: Manifest) -> None:
    """Sample 0 transforms two dims: CPU agrees with itself, values are judged."""
    case = prepare(get_case("opinfo/fft.ihfftn/out/float64/0"), manifest)
    expected = case.reference()
    observed = case.run_on("cpu")
    verdict = case.judge(expected, observed)
    assert verdict.ok and verdict.note is None
    bad = dict(observed, output=observed["output"] + 1)
    assert "output.output" in (case.judge(expected, bad).mismatch or "")


def test_cpu_disagrees_compares_bit_for_bit_with_nan_equal() -> None:
    """NaN in the same place agrees; one ulp, a shape or a count does not."""
    a = torch.tensor([1.0, float("nan"), 3.0])
    assert not cpu_disagrees(a, a.clone())
    assert cpu_disagrees(a, torch.tensor([1.0, float("nan"), 3.0000002]))
    assert cpu_disagrees(a, a[:2])
    assert cpu_disagrees((a, a), (a,))


def test_out_metadata_mismatch_names_what_differs() -> None:
    """Shape, dtype and the returned out are judged; values are not."""
    exp = {"output": torch.zeros(2, 3), "returns_out": True}
    assert (
        out_metadata_mismatch(exp, {"output": torch.ones(2, 3), "returns_out": True})
        is None
    )
    assert "shape" in (
        out_metadata_mismatch(exp, {"output": torch.ones(3, 2), "returns_out": True})
        or ""
    )
    assert "dtype" in (
        out_metadata_mismatch(
            exp, {"output": torch.ones(2, 3, dtype=torch.float64), "returns_out": True}
        )
        or ""
    )


def test_every_entry_is_complete_and_only_ops_it_names_are_covered() -> None:
    """A reviewer reads cause, what is judged and the issue title for each entry."""
    for defect in DEFECTS:
        assert defect.cause and defect.judged and defect.issue and defect.ops
        for op in defect.ops:
            assert defect_for(op, defect.variant) is defect
    assert defect_for("fft.ihfft", "out") is None
    assert defect_for("fft.ihfftn", "forward") is None


class _Bystander(TorchDispatchMode):
    """A dispatch mode that passes every call through unchanged."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


def test_the_mode_defect_reproduces_on_the_installed_torch() -> None:
    """matrix_rank(out=) writes out without a dispatch mode and leaves it as it was
    with one that changes nothing: when a torch release fixes it, this fails and the
    MODE_DEFECTS entry is removed."""
    eye = torch.eye(3, dtype=torch.float64)
    out = torch.full((), -7, dtype=torch.int64)
    torch.linalg.matrix_rank(eye, out=out)
    assert out.item() == 3
    out = torch.full((), -7, dtype=torch.int64)
    with _Bystander():
        torch.linalg.matrix_rank(eye, out=out)
    assert out.item() == -7
    assert mode_defect_for("linalg.matrix_rank", "out") in MODE_DEFECTS


def test_the_watch_steps_aside_only_for_its_own_mode() -> None:
    """route_recorder_off pops TorchCTS's route recorder, never another mode (a
    compiler's tracing stays on)."""
    with RouteRecorder("simdev", lambda name: None), route_recorder_off():
        assert _get_current_dispatch_mode() is None
    with _Bystander() as other, route_recorder_off():
        assert _get_current_dispatch_mode() is other
