"""The nonfinite variant: NaN, +Inf and -Inf placed where the docstring says, the same
for every process and the repro; wrong NaN or Inf handling fails with a message."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torchcts_cases import Selection, get_case, prepare, select_cases
from torchcts_cases.catalog import built_sample
from torchcts_cases.compare import compare
from torchcts_cases.nonfinite import VALUES, has_targets, placements, with_nonfinite
from torchcts_schema import Manifest

MakeManifest = Callable[..., Manifest]
CASE = "opinfo/add/nonfinite/float32/0"  # only the seed matters to the placement


def _sample(input: Any, *args: Any, **kwargs: Any) -> SimpleNamespace:
    return SimpleNamespace(input=input, args=args, kwargs=kwargs)


def _rotation(case_id: str) -> int:
    """The rotation the docstring gives, computed here from sha256 of the id."""
    seed = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "little")
    return seed % 3


def _kind(x: float) -> str:
    return "nan" if math.isnan(x) else "inf" if x == math.inf else "-inf"


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(
        torch.where(a.isnan(), 0, a), torch.where(b.isnan(), 0, b)
    )


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """float32 and int64, every OpInfo variant the nonfinite tests need, level 8."""
    return make_manifest(
        DTYPES={"float32": True, "int64": True},
        CAPABILITIES=["forward", "nonfinite"],
        LEVEL=8,
    )


def test_first_middle_last_get_nan_and_both_infinities() -> None:
    """A 3x4 float input gets the three values at flat 0, 6 and 11, rotated by the
    case seed; a second operand's rotation is one further along."""
    x, y = torch.arange(12.0).reshape(3, 4), torch.ones(3, 4)
    placed = with_nonfinite(_sample(x, y), CASE)
    r = _rotation(CASE)
    for k, tensor in enumerate((placed.input, placed.args[0])):
        flat = tensor.reshape(-1)
        got = [_kind(flat[i].item()) for i in (0, 6, 11)]
        assert got == [VALUES[(r + k + p) % 3] for p in range(3)]
        others = torch.ones(12, dtype=torch.bool)
        others[[0, 6, 11]] = False
        assert flat[others].isfinite().all()
    assert torch.equal(x, torch.arange(12.0).reshape(3, 4))  # the sample is untouched


def test_integer_bool_empty_and_python_values_are_left_alone() -> None:
    """Only non-empty floating and complex tensors are targets; a shared one once."""
    ints, flags = torch.arange(5), torch.tensor([True, False])
    empty, one = torch.empty(0, 3), torch.tensor([2.0])
    z = torch.zeros(4, dtype=torch.complex64)
    sample = _sample(ints, flags, empty, one, one, 3.5, weight=z)
    placed = with_nonfinite(sample, CASE)
    assert torch.equal(placed.input, ints) and torch.equal(placed.args[0], flags)
    assert placed.args[1].shape == (0, 3) and placed.args[4] == 3.5
    assert placed.args[2] is placed.args[3]  # aliasing kept by the copy
    assert [p.path for p in placed.placements] == [
        ("args", 2),
        ("kwargs", "weight"),
        ("kwargs", "weight"),
        ("kwargs", "weight"),
    ]
    assert not placed.args[2].isfinite().any()
    w = placed.kwargs["weight"]
    assert w.imag.eq(0).all() and (~w.real.isfinite()).sum() == 3
    assert not has_targets(_sample(ints, flags, empty, 1.5))


def test_placement_depends_on_the_case_id_alone() -> None:
    """Two builds agree bit for bit; the rotation follows the id, not the process."""
    sample = _sample(torch.randn(7), torch.randn(7))
    first, again = with_nonfinite(sample, CASE), with_nonfinite(sample, CASE)
    assert first.placements == again.placements
    assert _same(first.input, again.input) and _same(first.args[0], again.args[0])
    rotations = {_rotation(f"opinfo/add/nonfinite/float32/{n}") for n in range(12)}
    assert len(rotations) == 3  # other cases see other orders
    other = placements(sample, "opinfo/add/nonfinite/float32/1")
    expected_first = VALUES[_rotation("opinfo/add/nonfinite/float32/1")]
    assert other[0].value == expected_first and other[0].index == (0,)


def test_writing_into_a_view_writes_its_base_in_the_copy() -> None:
    """A view and its base stay one storage, as on CPU and on the device."""
    base = torch.zeros(2, 3)
    view = base[1]
    placed = with_nonfinite(_sample(view, base), CASE)
    assert placed.input._base is placed.args[0]
    assert torch.equal(placed.args[0][1].isnan(), placed.input.isnan())
    assert torch.equal(base, torch.zeros(2, 3))


def test_scalar_results_judge_nan_and_inf_exactly() -> None:
    """NaN equals NaN, Inf only the same Inf, and never a finite number."""
    assert compare(math.nan, math.nan) is None
    assert compare(math.inf, math.inf) is None
    assert compare(complex(math.nan, 1), complex(math.nan, 0)) is None
    for expected, observed in ((math.inf, 5.0), (math.inf, -math.inf), (math.nan, 0.0)):
        assert compare(expected, observed) is not None


def test_a_backend_that_loses_nan_or_inf_fails_naming_them(manifest: Manifest) -> None:
    """maximum must propagate NaN: a result with NaN as 0 or Inf as the largest
    float fails, and the mismatch says where CPU has the non-finite value."""
    case = prepare(get_case("opinfo/maximum/nonfinite/float32/1"), manifest)
    expected = case.reference()
    assert isinstance(expected, torch.Tensor) and expected.isnan().any()
    assert case.judge(expected, case.run_on("cpu")).ok
    for wrong in (
        expected.nan_to_num(nan=0.0, posinf=math.inf, neginf=-math.inf),
        expected.nan_to_num(nan=math.nan),  # +-Inf become the largest finite floats
    ):
        verdict = case.judge(expected, wrong)
        assert not verdict.ok
        assert "NaN/Inf not where CPU has them" in (verdict.mismatch or "")
        assert "\n" not in (verdict.mismatch or "")


def test_a_backend_that_raises_where_cpu_returns_nan_is_not_excused(
    manifest: Manifest,
) -> None:
    """CPU's result on NaN is the contract; CPU's exception would be too."""
    case = prepare(get_case("opinfo/abs/nonfinite/float32/0"), manifest)
    expected = case.reference()
    from torchcts_cases.compare import RaisedError

    raised = RaisedError.of(RuntimeError("input contains NaN"))
    verdict = case.judge(expected, raised)
    assert not verdict.ok and "raised RuntimeError" in (verdict.mismatch or "")


def test_cases_number_the_samples_that_can_hold_a_value(manifest: Manifest) -> None:
    """exp's float32 nonfinite cases skip forward samples without a non-empty float
    tensor; an integer-only op in int64 has none; the index map says which is which."""
    from torchcts_cases import index, opinfo_source

    op = opinfo_source.find_op("exp")
    counted = opinfo_source.variant_counts(op, torch.float32)
    items = list(opinfo_source._samples(op, torch.float32, requires_grad=False))
    assert counted.nonfinite_samples == [
        i for i, s in enumerate(items) if has_targets(s)
    ]
    assert 0 < counted.counts["nonfinite"] < counted.counts["forward"]
    entry = index.shard("float32")["exp"]
    for n in range(entry["counts"]["nonfinite"]):
        case = prepare(get_case(f"opinfo/exp/nonfinite/float32/{n}"), manifest)
        assert case.built_from == counted.nonfinite_samples[n]  # type: ignore[attr-defined]
        assert built_sample(entry, "nonfinite", n) == case.built_from  # type: ignore[attr-defined]
    ints = opinfo_source.variant_counts(
        opinfo_source.find_op("bitwise_and"), torch.int64
    )
    assert ints.counts["forward"] > 0 and "nonfinite" not in ints.counts


def test_undefined_results_are_not_run_with_the_reason(manifest: Manifest) -> None:
    """A cast to an integer dtype has no defined result on NaN: its nonfinite cases
    are not_run (comparison_not_valid) saying so; a cast to bool (NaN is true) runs."""
    from torchcts_schema import NotRunReason

    selected = select_cases(manifest, Selection(op_globs=("long", "bool")))
    skipped = [
        r for r in selected.not_run if (r.op, r.variant) == ("long", "nonfinite")
    ]
    assert skipped
    assert {r.not_run_reason for r in skipped} == {NotRunReason.COMPARISON_NOT_VALID}
    assert all("integer dtype" in (r.detail or "") for r in skipped)
    runs = {(s.op, s.variant) for s in selected.runnable}
    assert ("bool", "nonfinite") in runs and ("long", "nonfinite") not in runs


def test_complex_inputs_follow_opinfo_extremal_flag() -> None:
    """A unary ufunc that says it cannot handle complex NaN/Inf is not judged there."""
    from torchcts_cases.nonfinite import nonfinite_not_valid

    unsure = SimpleNamespace(name="f", handles_complex_extremal_values=False)
    assert "complex NaN" in (nonfinite_not_valid(unsure, torch.complex64) or "")
    assert nonfinite_not_valid(unsure, torch.float32) is None
    assert nonfinite_not_valid(SimpleNamespace(name="f"), torch.complex64) is None
    linspace = SimpleNamespace(name="linspace")
    assert nonfinite_not_valid(linspace, torch.int64) is not None
    assert nonfinite_not_valid(linspace, torch.float32) is None


@pytest.mark.parametrize(
    ("name", "solver"),
    [("linalg.eigvals", True), ("linalg.cholesky", True), ("svd", True),
     ("triangular_solve", True), ("linalg.vector_norm", False), ("linalg.vecdot", False),
     ("matmul", False), ("lu_unpack", False)],
)  # fmt: skip
def test_linear_algebra_solvers_are_not_judged_on_nan(name: str, solver: bool) -> None:
    """PyTorch leaves solvers undefined on NaN and Inf (CPU's eigvals segfaults);
    matmul and elementwise linalg ops stay judged."""
    from torchcts_cases.nonfinite import nonfinite_not_valid

    why = nonfinite_not_valid(SimpleNamespace(name=name), torch.float32)
    assert (why is not None) == solver
    assert why is None or "linear-algebra solver" in why


SLICE = ("abs", "exp", "sum", "maximum", "clamp", "softmax", "sort")


def test_cpu_against_cpu_passes_on_a_slice(manifest: Manifest) -> None:
    """Validation: the nonfinite cases of a slice pass against CPU itself, values,
    legal-output ties (sort) and CPU's own exceptions included."""
    selected = select_cases(manifest, Selection(op_globs=SLICE, suites=("opinfo",)))
    specs = [s for s in selected.runnable if s.variant == "nonfinite"]
    assert {s.op for s in specs} >= set(SLICE)  # softmax.with_dtype too
    failures = []
    for spec in specs[::3]:
        case = prepare(spec, manifest)
        verdict = case.judge(case.reference(), case.run_on("cpu"))
        if not verdict.ok:
            failures.append((spec.case_id, verdict.mismatch))
    assert failures == []


@pytest.mark.parametrize("literal", [True, False])
@pytest.mark.parametrize("sample", [0, 5])  # 5 is built from forward sample 6
def test_the_repro_script_rebuilds_the_same_inputs(
    manifest: Manifest,
    literal: bool,
    sample: int,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As literals or replayed from the seeds with the placements written after, the
    script's input, args and kwargs are the case's, and on CPU it matches."""
    case = prepare(get_case(f"opinfo/softmax/nonfinite/float32/{sample}"), manifest)
    if not literal:
        monkeypatch.setattr("torchcts_cases.repro.LITERAL_MAX_NUMEL", -1)
    source = case.repro_source("cpu", None, {})
    assert ("input, args, kwargs = (torch.tensor(" in source) == literal
    assert ("# the NaN and Inf TorchCTS placed" in source) != literal
    built = case.sample()
    torch.manual_seed(99)
    namespace: dict[str, Any] = {"__name__": "repro"}
    exec(compile(source, str(tmp_path / "repro.py"), "exec"), namespace)
    assert _same(namespace["input"], built.input) and namespace["input"].numel() > 0
    assert namespace["args"] == built.args and namespace["kwargs"] == built.kwargs
    assert "the failure did not reproduce" in capsys.readouterr().out


def test_max_unpool_twins_get_the_same_value() -> None:
    """max_unpool writes two values with one index into one output element in an
    unspecified order: a value placed at one of them goes to every position of the
    same plane with that index (listed too), never to another plane or index."""
    values = torch.arange(8.0).reshape(1, 2, 1, 4)
    indices = torch.tensor([[[[0, 3, 0, 5]], [[0, 1, 2, 0]]]])
    sample = _sample(values, indices, kernel_size=2)
    plain = placements(sample, CASE)
    twinned = placements(sample, CASE, "nn.functional.max_unpool2d")
    assert [p.index for p in plain] == [(0, 0, 0, 0), (0, 1, 0, 0), (0, 1, 0, 3)]
    assert len(twinned) == len(plain) + 3
    built = with_nonfinite(sample, CASE, "nn.functional.max_unpool2d").input
    for a, b in (((0, 0, 0, 0), (0, 0, 0, 2)), ((0, 1, 0, 0), (0, 1, 0, 3))):
        assert _same(built[a], built[b]) and not math.isfinite(built[a])
    assert built[0, 0, 0, 1] == 1 and built[0, 1, 0, 1] == 5  # index 3 and 1: alone
    assert placements(sample, CASE, "add") == plain
