"""Executing cases: CPU judged against CPU passes; wrong results are caught."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torchcts_cases import (
    OracleUnavailable,
    RaisedError,
    Selection,
    get_case,
    prepare,
    select_cases,
)
from torchcts_schema import CAPABILITY_NAMES, Manifest

ALL_CAPS = list(CAPABILITY_NAMES)
MakeManifest = Callable[..., Manifest]
SLICE = (
    "add", "sum", "sort", "max", "cat", "index_select", "unique", "where", "matmul",
    "nn.functional.dropout", "empty_like", "clamp", "topk", "masked_fill", "div",
)  # fmt: skip


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """float32 with every capability at level 4."""
    return make_manifest(DTYPES={"float32": True}, CAPABILITIES=ALL_CAPS, LEVEL=4)


def test_cpu_against_cpu_passes_on_a_slice(manifest: Manifest) -> None:
    """Validation: every variant of a representative slice passes against CPU itself."""
    selected = select_cases(manifest, Selection(op_globs=SLICE, suites=("opinfo",)))
    variants = {s.variant for s in selected.runnable}
    assert variants == {"forward", "method", "inplace", "out", "backward",
                        "noncontiguous", "nonfinite", "error_inputs"}  # fmt: skip
    failures = []
    for spec in selected.runnable[::5]:
        case = prepare(spec, manifest)
        try:
            expected = case.reference()
        except OracleUnavailable:
            continue  # diagnostics, never a backend result
        verdict = case.judge(expected, case.run_on("cpu"))
        if not verdict.ok:
            failures.append((spec.case_id, verdict.mismatch))
    assert failures == []


def test_meta_is_judged_on_metadata(manifest: Manifest) -> None:
    """On meta, shapes, dtypes and strides are compared; values never are."""
    case = prepare(get_case("opinfo/add/forward/float32/0"), manifest)
    observed = case.run_on("meta")
    assert isinstance(observed, torch.Tensor) and observed.device.type == "meta"
    assert case.judge(case.reference(), observed, metadata_only=True).ok


def test_wrong_values_shape_and_dtype_fail(manifest: Manifest) -> None:
    """A perturbed value, a wrong shape or a wrong dtype is a one-line mismatch."""
    case = prepare(get_case("opinfo/mul/forward/float32/1"), manifest)
    expected = case.reference()
    assert isinstance(expected, torch.Tensor) and expected.numel() > 1
    wrong = expected.clone()
    wrong.view(-1)[0] += 1
    for bad, word in ((wrong, "Mismatched"), (expected.double(), "dtype"),
                      (expected.reshape(-1)[:1], "shape")):  # fmt: skip
        verdict = case.judge(expected, bad)
        assert not verdict.ok and word in (verdict.mismatch or "")
        assert "\n" not in (verdict.mismatch or "")


def test_inplace_must_return_self(manifest: Manifest) -> None:
    """An in-place variant that returns a new tensor instead of self fails."""
    case = prepare(get_case("opinfo/add/inplace/float32/0"), manifest)
    expected = case.reference()
    observed = dict(case.run_on("cpu"))  # type: ignore[call-overload]
    assert case.judge(expected, observed).ok
    observed["returns_self"] = False
    verdict = case.judge(expected, observed)
    assert not verdict.ok and "returns_self" in (verdict.mismatch or "")


def test_error_inputs_compare_type_and_pattern(manifest: Manifest) -> None:
    """Error inputs: the device must raise CPU's exception type with OpInfo's pattern."""
    spec = get_case("opinfo/cat/error_inputs/-/0")
    case = prepare(spec, manifest)
    expected = case.reference()
    assert isinstance(expected, RaisedError) and expected.pattern
    assert case.judge(expected, case.run_on("cpu")).ok
    silent = case.judge(expected, torch.zeros(1))
    assert not silent.ok and "no exception" in (silent.mismatch or "")
    other = RaisedError("ValueError", "nope", ("ValueError", "Exception"))
    assert not case.judge(expected, other).ok
    wrong_text = RaisedError(expected.type_name, "something else", expected.mro)
    assert not case.judge(expected, wrong_text).ok


def test_unsupported_errors_propagate_even_when_an_error_is_expected(
    manifest: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend 'not implemented' is re-raised for the runner to classify."""
    case = prepare(get_case("opinfo/cat/error_inputs/-/0"), manifest)
    case.reference()

    def boom(device: str) -> object:
        raise NotImplementedError("aten::cat is not implemented for simdev")

    monkeypatch.setattr(case, "_execute", boom)
    with pytest.raises(NotImplementedError):
        case.run_on("simdev")


def test_ties_accept_any_legal_index(manifest: Manifest) -> None:
    """sort with tied values accepts another valid index order, rejects a wrong one."""
    case = prepare(get_case("opinfo/sort/forward/float32/0"), manifest)
    case._item = _sample_of(torch.tensor([3.0, 1.0, 3.0, 1.0]))  # type: ignore[attr-defined]
    values, indices = case.reference()  # type: ignore[misc]
    swapped = torch.tensor([3, 1, 2, 0]) if indices.tolist() == [1, 3, 0, 2] else None
    assert swapped is not None
    assert case.judge((values, indices), (values, swapped)).ok
    assert not case.judge((values, indices), (values, torch.tensor([0, 1, 2, 3]))).ok


def test_unique_is_compared_as_a_set(manifest: Manifest) -> None:
    """unique's order is not defined when unsorted: a permutation passes."""
    spec = next(
        s
        for s in select_cases(manifest, Selection(op_globs=("unique",))).runnable
        if s.variant == "forward"
    )
    case = prepare(spec, manifest)
    expected = case.reference()
    first = expected[0] if isinstance(expected, tuple) else expected
    flipped = first.flip(0)
    observed = (flipped, *expected[1:]) if isinstance(expected, tuple) else flipped
    assert case.judge(expected, observed).ok


def test_tolerance_overrides(make_manifest: MakeManifest) -> None:
    """Manifest tolerances widen a dtype or one op; integers stay exact by default."""
    from torchcts_cases import tolerance_for

    assert tolerance_for("int64") == (0.0, 0.0)
    assert tolerance_for("float16")[1] > tolerance_for("float32")[1]
    over = {
        "dtypes": {"float32": {"atol": 0.5}},
        "ops": {"mul": {"float32": {"rtol": 0.25}}},
    }
    assert tolerance_for("float32", "mul", over) == (0.5, 0.25)
    m = make_manifest(DTYPES={"float32": True}, TOLERANCES=over)
    case = prepare(get_case("opinfo/mul/forward/float32/1"), m)
    expected = case.reference()
    assert case.judge(expected, expected + 0.4).ok  # type: ignore[operator]
    assert not case.judge(expected, expected + 5.0 + expected.abs()).ok  # type: ignore[operator]


def _sample_of(t: torch.Tensor) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(input=t, args=(), kwargs={})


def test_an_empty_complex_output_has_a_backward_reference(
    make_manifest: MakeManifest,
) -> None:
    """flip's sample 5 is an empty (5, 0, 10) tensor: the backward reference of its
    complex dtypes is built, and CPU judged against it passes (a loss through
    view_as_real left these cases without a reference: CPU's own view_as_complex
    refuses the empty gradient)."""
    m = make_manifest(DTYPES={"complex64": True}, CAPABILITIES=ALL_CAPS, LEVEL=4)
    case = prepare(get_case("opinfo/flip/backward/complex64/5"), m)
    expected = case.reference()
    assert case.judge(expected, case.run_on("cpu")).ok
