"""Generated per-overload cases (suite ``aten``): kinds and siblings read from the
schemas, calls adapted between siblings, specs listed through the catalog and the
selection, and checks whose observations name the property that broke."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torchcts_cases import catalog, get_case, overload_checks, select_cases
from torchcts_cases.overload_schema import (
    adapt_call,
    all_overloads,
    functional_sibling,
    not_generated,
)
from torchcts_cases.overload_variants import SUITE, VARIANT_FACTS, valid_entry
from torchcts_schema import CAPABILITY_NAMES, Manifest, Selection

OVERLOADS = {o.name: o for o in all_overloads()}


@pytest.mark.parametrize(
    ("name", "kind", "functional"),
    [
        ("add.out", "out", "add.Tensor"),
        ("add.Scalar_out", "out", "add.Scalar"),
        ("sum.IntList_out", "out", "sum.dim_IntList"),
        ("linspace.out", "out", "linspace"),  # a factory: no dtype or device
        ("threshold_backward.grad_input", "out", "threshold_backward"),
        ("add_.Tensor", "inplace", "add.Tensor"),
        ("add_.Scalar", "inplace", "add.Scalar"),
        ("__iand__.Tensor", "inplace", "__and__.Tensor"),
        ("threshold_backward", "backward", "threshold_backward"),
        ("pow.Tensor_Scalar", "call", "pow.Tensor_Scalar"),
        # a foreach op's out= writes a list of outs
        ("_foreach_add.List_out", "out", "_foreach_add.List"),
        # several arguments written: a fused step, a batch norm updating its stats
        ("_fused_adam_", "writes", "_fused_adam"),
        ("_fused_adam.out", "writes", "_fused_adam"),
        ("_batch_norm_with_update.out", "writes", "_batch_norm_with_update"),
        ("_cummax_helper", "writes", "_cummax_helper"),
        # the functional in another packet (reviewed)
        (
            "adaptive_avg_pool3d_backward.grad_input",
            "out",
            "_adaptive_avg_pool3d_backward",
        ),
    ],
)
def test_kind_and_functional_sibling_come_from_the_schema(
    name: str, kind: str, functional: str
) -> None:
    """An overload's kind and the functional overload it is checked through."""
    ovl = OVERLOADS[name]
    assert ovl.kind == kind
    assert functional_sibling(ovl) == functional


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("_fused_sdp_choice", "an enum of each backend's own"),
        ("normal.Tensor_float", "random"),
        ("randint_like.out", "random"),
        ("empty.memory_format", "uninitialised"),
        ("square", "CompositeImplicitAutograd"),
        ("sort.values", "tie-breaking"),
        ("_fused_moving_avg_obs_fq_helper", "quantization"),
    ],
)
def test_what_is_not_generated_says_why(name: str, reason: str) -> None:
    """Overloads no generated case can judge are named with a reason."""
    found = not_generated(OVERLOADS[name])
    assert found is not None and reason in found


def test_a_tensor_argument_becomes_a_scalar_and_back() -> None:
    """add.Tensor's captured other tensor is add.Scalar's number; pow.Scalar takes
    its self as a number; a required argument the donor lacks is the reason."""
    x, two = torch.ones(3), torch.tensor(2.0)
    # add.Tensor's alpha is keyword-only, add.Scalar's positional
    args, kwargs = adapt_call("add.Tensor", (x, two), {"alpha": 3}, "add.Scalar")
    assert args[0] is x and args[1:] == (2.0, 3) and type(args[1]) is float
    assert kwargs == {}
    args, kwargs = adapt_call("pow.Tensor_Tensor", (two, x), {}, "pow.Scalar")
    assert args[0] == 2.0 and args[1] is x
    args, _ = adapt_call("add.Scalar", (x, 5), {}, "add.Tensor")
    assert isinstance(args[1], torch.Tensor) and args[1].item() == 5
    assert adapt_call("div.Tensor", (x, x), {}, "div.Tensor_mode") == (
        "div.Tensor supplies no 'rounding_mode' for div.Tensor_mode"
    )


def _call(fn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every overload the checks call `fn` (a kernel with a bug)."""
    monkeypatch.setattr(overload_checks, "op_overload", lambda name: fn)


def test_inplace_properties_name_what_broke(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 'in-place' kernel returning a new tensor and leaving self unwritten breaks
    returns-self; self and its view keep the old values."""
    call = ((torch.zeros(3), torch.ones(3)), {})
    good = overload_checks.observe("inplace", "add_.Tensor", "add.Tensor", call, "cpu")
    assert good["in-place returns self"] is True
    assert good["in-place keeps self's storage"] is True
    assert good["in-place storage written"].tolist() == [1.0, 1.0, 1.0]
    assert good["in-place write seen by a view"].tolist() == [1.0, 1.0, 1.0]
    _call(lambda self, other: self + other, monkeypatch)
    bad = overload_checks.observe("inplace", "add_.Tensor", "add.Tensor", call, "cpu")
    assert bad["in-place returns self"] == "returned a Tensor that is not self"
    assert bad["in-place storage written"].tolist() == [0.0, 0.0, 0.0]


def test_out_properties_name_what_broke(monkeypatch: pytest.MonkeyPatch) -> None:
    """An out= kernel returning a fresh tensor breaks returns-out; resize and dtype
    observations are the outs, or the error the CPU raised."""
    call = ((torch.ones(2, 3), torch.ones(2, 3)), {})
    good = overload_checks.observe("out", "add.out", "add.Tensor", call, "cpu")
    assert good["out= returns out"] is True
    resize = overload_checks.observe("out_resize", "add.out", "add.Tensor", call, "cpu")
    assert [list(t.shape) for t in resize["out= resizes an empty out"]] == [[2, 3]]
    assert [list(t.shape) for t in resize["out= resizes a wrong-shape out"]] == [[2, 3]]
    dtype = overload_checks.observe("out_dtype", "add.out", "add.Tensor", call, "cpu")
    refused = dtype["out= of a wrong dtype"]
    assert isinstance(refused, overload_checks.RaisedError)
    assert refused.type_name == "RuntimeError"
    real = torch.ops.aten.add.Tensor
    _call(lambda *a, out=None, **k: real(*a, **k), monkeypatch)
    bad = overload_checks.observe("out", "add.out", "add.Tensor", call, "cpu")
    assert bad["out= returns out"] == "did not return the out tensors it was given"


def test_generated_specs_round_trip_through_the_catalog() -> None:
    """Every listed case rebuilds from its id, above level 1, with its overload as
    its surface and a capability a manifest can claim."""
    specs = [spec for spec, _ in catalog.overload_cases()]
    assert len(specs) > 1500
    assert {s.variant for s in specs} == set(VARIANT_FACTS)
    for spec in specs:
        assert get_case(spec.case_id) == spec
        assert spec.level >= 2
        assert spec.surfaces == (f"aten::{spec.op}",)
        assert spec.capability in CAPABILITY_NAMES
    assert get_case("aten/add.out/out/float32/0").capability == "out"


@pytest.mark.parametrize(
    "case_id",
    [
        "aten/add.out/out/float64/0",  # not the donor's dtype
        "aten/add.out/inplace/float32/0",  # not a variant of an out= overload
        "aten/add.out/out/float32/1",  # one donor: sample 0
        "aten/square/call/float32/0",  # composite: not generated
        "aten/no_such_op/call/float32/0",
    ],
)
def test_unknown_overload_case_ids_are_refused(case_id: str) -> None:
    """A case id the index does not generate is a KeyError naming it."""
    with pytest.raises(KeyError, match="no generated overload case"):
        get_case(case_id)


def test_level_one_runs_none_and_level_two_runs_the_cheap_ones(
    make_manifest: Callable[..., Manifest],
) -> None:
    """`make run`'s level 1 selects no overload case; level 2 the sibling calls and
    in-place cases; the manifest's OPS exclusions match the functional packet."""
    manifest = make_manifest(
        CAPABILITIES=list(CAPABILITY_NAMES),
        DTYPES={"float32": True, "int64": True, "bool": True},
        OPS={"exclude": {"add": "no add kernel"}},
    )
    one = select_cases(manifest, Selection(level=1, suites=(SUITE,)))
    assert one.runnable == []
    two = select_cases(manifest, Selection(level=2, suites=(SUITE,)))
    assert two.runnable
    assert {s.variant for s in two.runnable} == {"call", "inplace"}
    assert not any(s.op.startswith(("add.", "add_.")) for s in two.runnable)
    excluded = {r.case_id for r in two.not_run if r.not_run_reason == "op_excluded"}
    assert "aten/add_.Tensor/inplace/float32/0" in excluded


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "out"},
        {"kind": "out", "reason": 3},
        {"kind": "out", "functional": "add.Tensor", "donor": {}, "variants": ["out"]},
        {
            "kind": "inplace",
            "functional": "add.Tensor",
            "donor": {"op": "add", "dtype": "float32", "grad": False, "overload": "x"},
            "variants": ["out"],  # not an in-place variant
        },
    ],
)
def test_malformed_shard_entries_are_refused(entry: dict[str, Any]) -> None:
    """A cached shard entry of the wrong shape is never trusted."""
    assert not valid_entry(entry)


def test_a_multi_write_overload_observes_every_argument_it_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_amp_update_scale_ writes its scale and its growth tracker: both are
    observed after the call, under keys naming them; a kernel that leaves the
    tracker alone changes only that observation. Its out= form observes the out,
    the tracker, and that it returned the out."""
    scale, tracker = torch.full((1,), 4.0), torch.ones(1, dtype=torch.int32)
    call = ((scale, tracker, torch.zeros(1), 2.0, 0.5, 2), {})
    seen = overload_checks.observe(
        "writes", "_amp_update_scale_", "_amp_update_scale", call, "cpu"
    )
    assert seen["writes: argument self"].tolist() == [8.0]  # grown: 2 of 2 steps
    assert seen["writes: argument growth_tracker"].tolist() == [0]
    assert tracker.tolist() == [1]  # the call's own tensors stay as they were
    out = overload_checks.observe(
        "writes", "_amp_update_scale.out", "_amp_update_scale", call, "cpu"
    )
    assert out["writes: returns out"] is True
    assert [t.tolist() for t in out["writes: out"]] == [[8.0]]
    real = torch.ops.aten._amp_update_scale.default

    def no_tracker(self, tracker, *rest):  # type: ignore[no-untyped-def]
        new_scale, _ = real(self, tracker.clone(), *rest)
        return self.copy_(new_scale)

    _call(no_tracker, monkeypatch)
    bad = overload_checks.observe(
        "writes", "_amp_update_scale_", "_amp_update_scale", call, "cpu"
    )
    assert bad["writes: argument self"].tolist() == [8.0]
    assert bad["writes: argument growth_tracker"].tolist() == [1]


def test_a_schema_donor_needs_its_plan() -> None:
    """A schema-built entry without an integer plan number cannot rebuild its call."""
    entry = {
        "kind": "call",
        "functional": "_add_relu.Tensor",
        "donor": {"op": "<schema>", "dtype": "float32", "grad": False},
        "variants": ["call"],
    }
    entry["donor"]["overload"] = "_add_relu.Tensor"
    assert not valid_entry(entry)
    entry["donor"]["plan"] = 0
    assert valid_entry(entry)
    entry["donor"]["plan"] = "0"
    assert not valid_entry(entry)


def test_schema_built_cases_sit_at_level_three_or_above() -> None:
    """Cases whose call is built from the schema (no OpInfo sample reaches the
    overload) are listed at level 3 (call, in-place, out=) or 4 (out dtype,
    backward); captured ones keep their variant's level."""
    shard = catalog.index.shard(catalog.index.OVERLOADS_SHARD)
    built = [
        spec
        for spec, _ in catalog.overload_cases()
        if shard[spec.op]["donor"]["op"] == "<schema>"
    ]
    assert len(built) > 100
    for spec in built:
        assert spec.level == max(3, VARIANT_FACTS[spec.variant][0]), spec.case_id
    assert get_case("aten/_add_relu.Tensor/call/float32/0").level == 3
    assert get_case("aten/add.Scalar/call/float32/0").level == 2
