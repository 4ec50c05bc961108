"""Cases from PyTorch's foreach OpInfo lists: ids, variants, levels and judgement."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torchcts_cases import get_case, opinfo_source, prepare
from torchcts_cases.levels import FAMILY_GENERAL, op_family
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """float32 with every capability at level 8."""
    return make_manifest(
        DTYPES={"float32": True}, CAPABILITIES=list(CAPABILITY_NAMES), LEVEL=8
    )


def test_every_foreach_list_is_in_the_table_with_its_own_ids() -> None:
    """Each foreach list's ops are in the table, under ``_foreach_`` names op_db lacks."""
    from torch.testing._internal import common_methods_invocations as cmi

    lists = opinfo_source.foreach_db_names(cmi)
    assert {"foreach_unary_op_db", "foreach_binary_op_db"} <= set(lists)
    foreach = {opinfo_source.op_segment(op) for n in lists for op in getattr(cmi, n)}
    plain = {opinfo_source.op_segment(op) for op in cmi.op_db}
    table = opinfo_source.op_table()
    assert foreach <= set(table) and not foreach & plain
    assert len(table) == len(plain) + len(foreach)  # nothing overwritten
    assert all(name.startswith("_foreach_") for name in foreach)
    assert all(opinfo_source.is_foreach(table[n]) for n in foreach)


def test_foreach_variants_exclude_method_and_out() -> None:
    """No method (it is the function itself) nor out= (Python has none); in-place
    where the list has one; an op whose only form is in-place has in-place only."""
    add = opinfo_source.variant_counts(
        opinfo_source.find_op("_foreach_add"), torch.float32
    ).counts
    assert add["forward"] == add["inplace"] == add["noncontiguous"] > 0
    assert add["backward"] > 0 and "method" not in add and "out" not in add
    norm = opinfo_source.variant_counts(
        opinfo_source.find_op("_foreach_norm"), torch.float32
    ).counts
    assert "inplace" not in norm and norm["forward"] > 0
    zero = opinfo_source.variant_counts(
        opinfo_source.find_op("_foreach_zero"), torch.float32
    ).counts
    assert set(zero) == {"inplace"}


def test_foreach_cases_sit_at_the_general_level_and_name_their_packets() -> None:
    """Forward cases are level 3 (general ops), backward level 4; the in-place case
    means to reach the in-place packet."""
    assert op_family("_foreach_add", elementwise_or_reduction=False) == FAMILY_GENERAL
    forward = get_case("opinfo/_foreach_add/forward/float32/0")
    assert forward.level == 3 and forward.capability == "forward"
    assert forward.surfaces == ("aten::_foreach_add",)
    inplace = get_case("opinfo/_foreach_add/inplace/float32/0")
    assert inplace.surfaces == ("aten::_foreach_add_",)
    assert get_case("opinfo/_foreach_add/backward/float32/0").level == 4
    assert get_case("opinfo/abs/inplace/float32/0").surfaces == ("aten::abs_",)
    with pytest.raises(KeyError):
        get_case("opinfo/_foreach_add/method/float32/0")


def test_a_wrong_tensor_in_the_list_fails_naming_it(manifest: Manifest) -> None:
    """CPU against CPU passes; one wrong element in tensor 3 of the list fails there."""
    case = prepare(get_case("opinfo/_foreach_mul/forward/float32/0"), manifest)
    expected = case.reference()
    assert isinstance(expected, tuple | list) and len(expected) > 3
    assert case.judge(expected, case.run_on("cpu")).ok
    wrong = [t.clone() for t in expected]
    wrong[3].view(-1)[0] += 1
    verdict = case.judge(expected, wrong)
    assert not verdict.ok and (verdict.mismatch or "").startswith("output[3]")


def test_an_inplace_foreach_that_skips_a_tensor_fails(manifest: Manifest) -> None:
    """The in-place case judges every tensor of the list it mutates."""
    case = prepare(get_case("opinfo/_foreach_add/inplace/float32/0"), manifest)
    expected = case.reference()
    assert isinstance(expected, dict)
    observed = case.run_on("cpu")
    assert case.judge(expected, observed).ok
    assert isinstance(observed, dict)
    observed["self"][5] = case.sample().input[5].clone()  # tensor 5 left unwritten
    verdict = case.judge(expected, observed)
    assert not verdict.ok and "self[5]" in (verdict.mismatch or "")


def test_a_cpu_backward_that_raises_is_no_reference(manifest: Manifest) -> None:
    """torch 2.13's _foreach_addcdiv backward raises IndexError after a forward that
    works: no reference, with CPU's error, never an expected error the device must
    copy."""
    from torchcts_cases import OracleUnavailable

    case = prepare(get_case("opinfo/_foreach_addcdiv/backward/float32/0"), manifest)
    with pytest.raises(
        OracleUnavailable, match=r"CPU.s own backward fails.*IndexError"
    ):
        case.reference()
    forward = prepare(get_case("opinfo/_foreach_addcdiv/forward/float32/0"), manifest)
    assert forward.judge(forward.reference(), forward.run_on("cpu")).ok
