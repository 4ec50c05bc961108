"""Which OpInfo results have contract strides (`torchcts_cases.layout_contract`), how a
wrong layout reads, and that the judgement sees what the device returned: views from
PyTorch's schema, memory formats, out= tensors; everything else stays unjudged."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torchcts_cases import get_case, prepare
from torchcts_cases.layout_contract import (
    OUT_KEEPS,
    PRESERVES,
    VIEW,
    Expected,
    judge_layout,
)
from torchcts_cases.transfer import host_copy
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """The CPU, every capability, float32."""
    return make_manifest(
        DEVICE="cpu", DTYPES={"float32": True}, CAPABILITIES=list(CAPABILITY_NAMES)
    )


def _contract(case_id: str, manifest: Manifest) -> tuple[Expected, ...]:
    case = prepare(get_case(case_id), manifest)
    case.reference()
    return case._layout


def test_a_view_must_have_its_base_strides_and_offset() -> None:
    """A transposed view copied into row-major order fails naming strides; a right
    view at the wrong offset fails naming the storage offset; both say why."""
    base = torch.arange(12.0).view(3, 4)
    view = base.t()
    want = (Expected("output", (4, 3), (1, 4), 0, VIEW),)
    assert judge_layout(want, view) is None
    copied = judge_layout(want, view.contiguous())
    assert copied == f"output: strides (3, 1), expected (1, 4) ({VIEW})"
    moved = torch.arange(13.0)[1:].view(3, 4).t()
    assert judge_layout(want, moved) == (
        f"output: storage offset 1, expected 0 ({VIEW})"
    )


def test_only_dimensions_longer_than_one_are_judged() -> None:
    """A size-1 dimension's stride addresses nothing (check_significant_strides);
    another shape is the values comparison's to report, not the layout's."""
    want = (Expected("output[1]", (3, 1), (1, 1), None, PRESERVES),)
    assert judge_layout(want, [None, torch.empty_strided((3, 1), (1, 7))]) is None
    assert judge_layout(want, [None, torch.empty(3, 2)]) is None
    assert "strides (2, 1)" in str(judge_layout(want, [0, torch.empty(6)[::2, None]]))


@pytest.mark.parametrize(
    ("case_id", "why", "offset"),
    [
        ("opinfo/transpose/forward/float32/0", VIEW, 0),
        ("opinfo/transpose/noncontiguous/float32/1", VIEW, 1),  # the base's offset
        ("opinfo/t/method/float32/1", VIEW, 0),
        ("opinfo/select/forward/float32/0", VIEW, 10),
        ("opinfo/T/forward/float32/1", VIEW, 0),  # no schema: what it dispatches
        ("opinfo/clone/forward/float32/0", PRESERVES, None),
        ("opinfo/add/out/float32/0", OUT_KEEPS, None),
    ],
)
def test_contract_layouts_come_from_pytorch_metadata(
    case_id: str, why: str, offset: int | None, manifest: Manifest
) -> None:
    """Views by the schema's alias annotation or the overloads they dispatch,
    preserve_format on a dense input, out= tensors: each judged, with its reason."""
    (first, *_) = _contract(case_id, manifest)
    assert (first.why, first.offset) == (why, offset)


def test_memory_format_names_the_layout_it_sets(manifest: Manifest) -> None:
    """chalf(memory_format=channels_last) and contiguous() set the result's layout."""
    (cl,) = _contract("opinfo/chalf/forward/float32/4", manifest)
    assert cl.why == "memory_format=torch.channels_last sets the result's layout"
    assert cl.strides == (18, 1, 9, 3)
    (row_major,) = _contract("opinfo/contiguous/noncontiguous/float32/0", manifest)
    assert row_major.why.startswith("memory_format=torch.contiguous_format")


@pytest.mark.parametrize(
    "case_id",
    [
        "opinfo/add/forward/float32/0",  # a new tensor: the backend's layout
        "opinfo/clone/noncontiguous/float32/0",  # preserve_format, not dense
        "opinfo/unsafe_split/forward/float32/0",  # views, but no alias in the schema
        "opinfo/to/noncontiguous/float32/0",  # to("cpu"): a copy from any device
        "opinfo/add/backward/float32/0",  # autograd promises no gradient layout
    ],
)
def test_strides_the_backend_chooses_stay_unjudged(
    case_id: str, manifest: Manifest
) -> None:
    """Where PyTorch promises no layout, no expectation is made."""
    assert _contract(case_id, manifest) == ()


def test_cpu_validation_passes_view_and_format_cases(manifest: Manifest) -> None:
    """CPU against itself: every judged layout agrees (no false failure)."""
    for case_id in (
        "opinfo/transpose/noncontiguous/float32/1",
        "opinfo/split/forward/float32/0",
        "opinfo/chalf/forward/float32/4",
        "opinfo/add/out/float32/0",
    ):
        case = prepare(get_case(case_id), manifest)
        verdict = case.judge(case.reference(), case.run_on("cpu"))
        assert verdict.ok, (case_id, verdict.mismatch)


def test_host_copy_keeps_the_storage_offset() -> None:
    """A view's offset survives the copy to the host, with its strides and values
    (CPU views stand in for a device's; simdev's are pinned in tests/)."""
    base = torch.arange(24.0)
    for view in (base[6:].view(3, 6).t(), base[7:8].view(()), base[3:9]):
        copy = host_copy(view)
        assert (copy.stride(), copy.storage_offset()) == (
            view.stride(),
            view.storage_offset(),
        )
        assert torch.equal(copy, view)
