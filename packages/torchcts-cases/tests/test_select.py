"""Selection: every case runs or gets exactly one not_run record with its reason."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable

import pytest
from torchcts_cases import Selection, get_case, select_cases
from torchcts_schema import CAPABILITY_NAMES, Manifest, NotRunReason, Status

ALL_CAPS = list(CAPABILITY_NAMES)
MakeManifest = Callable[..., Manifest]


def _reasons(selected: object) -> Counter[str]:
    return Counter(r.not_run_reason.value for r in selected.not_run)  # type: ignore[attr-defined]


def test_level_one_is_the_primitives_in_every_variant(
    make_manifest: MakeManifest,
) -> None:
    """Level 1 on float32 runs the primitive ops in every variant but nonfinite, the
    other ops forward only, plus basic hand checks; nothing deeper."""
    from torchcts_cases.levels import PRIMITIVE_VARIANTS, is_primitive

    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=ALL_CAPS, LEVEL=1)
    selected = select_cases(m, Selection())
    assert 1000 < len(selected.runnable) < 4000
    assert all(s.level == 1 for s in selected.runnable)
    opinfo = [s for s in selected.runnable if s.suite == "opinfo"]
    assert {s.variant for s in opinfo if not is_primitive(s.op)} == {"forward"}
    assert {s.variant for s in opinfo if is_primitive(s.op)} == PRIMITIVE_VARIANTS
    ids = {s.case_id for s in selected.runnable}
    assert "opinfo/add/forward/float32/0" in ids
    assert "opinfo/add/backward/float32/8" in ids  # empty operands broadcast
    assert "opinfo/add/out/float32/5" not in ids  # not an edge sample


def test_every_case_is_accounted_for_once(make_manifest: MakeManifest) -> None:
    """runnable + not_run covers every case exactly once, in a deterministic order."""
    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=["forward"], LEVEL=2)
    first = select_cases(m, Selection())
    ids = [s.case_id for s in first.runnable] + [r.case_id for r in first.not_run]
    assert len(ids) == len(set(ids))
    again = select_cases(m, Selection())
    assert [s.case_id for s in again.runnable] == [s.case_id for s in first.runnable]
    assert all(r.status is Status.NOT_RUN and r.detail for r in first.not_run)


def test_reasons_name_each_exclusion(make_manifest: MakeManifest) -> None:
    """Capability, op exclusion, sample limit, level and comparison validity all appear."""
    m = make_manifest(
        DTYPES={"float32": True},
        CAPABILITIES=["forward"],
        LEVEL=8,
        MAX_SAMPLES_PER_OP=2,
        OPS={"exclude": {"sub": "not implemented yet"}},
    )
    selected = select_cases(m, Selection(level=4))
    reasons = _reasons(selected)
    for reason in ("capability_not_declared", "op_excluded", "sample_limit",
                   "level_filtered", "comparison_not_valid"):  # fmt: skip
        assert reasons[reason] > 0, reason
    excluded = [r for r in selected.not_run if r.op == "sub" and r.level <= 4]
    assert excluded and all("not implemented yet" in (r.detail or "") for r in excluded)


def test_dtype_regex_and_false(make_manifest: MakeManifest) -> None:
    """A dtype regex admits only matching ops; False excludes the dtype."""
    m = make_manifest(
        DTYPES={"float32": "add|mul", "int64": False}, CAPABILITIES=["forward"], LEVEL=1
    )
    selected = select_cases(m, Selection(suites=("opinfo",)))
    assert {s.op for s in selected.runnable} <= {"add", "mul"}
    assert "add" in {s.op for s in selected.runnable}
    int64 = [r for r in selected.not_run if r.dtype == "int64"]
    assert int64 and {r.not_run_reason for r in int64} <= {
        NotRunReason.DTYPE_NOT_SUPPORTED,
        NotRunReason.FILTERED_BY_SELECTION,
        NotRunReason.LEVEL_FILTERED,  # above the level, whatever DTYPES says
    }
    assert all(
        r.not_run_reason is NotRunReason.DTYPE_NOT_SUPPORTED
        for r in int64
        if r.level == 1 and r.suite == "opinfo"
    )
    assert any(r.not_run_reason is NotRunReason.DTYPE_NOT_SUPPORTED for r in int64)


def test_selection_filters(make_manifest: MakeManifest) -> None:
    """Suite, op glob and dtype filters narrow the run and report the rest."""
    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=ALL_CAPS, LEVEL=2)
    selected = select_cases(m, Selection(op_globs=("add*",), suites=("opinfo",)))
    assert selected.runnable and all(s.op.startswith("add") for s in selected.runnable)
    assert _reasons(selected)["filtered_by_selection"] > 0
    with pytest.raises(ValueError, match="unknown suite"):
        select_cases(m, Selection(suites=("nope",)))
    with pytest.raises(ValueError, match="unknown dtype"):
        select_cases(m, Selection(dtypes=("float99",)))


def test_uninitialised_and_random_ops_are_legal_output(
    make_manifest: MakeManifest,
) -> None:
    """OpInfo's 'cannot compare across devices' ops get a legal-output check or not_run."""
    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=["forward"], LEVEL=8)
    selected = select_cases(m, Selection(op_globs=("empty_like", "bernoulli", "byte")))
    sources = {s.op: s.expected_source.value for s in selected.runnable}
    assert sources["empty_like"] == "legal_output"
    assert sources["bernoulli"] == "legal_output"
    byte = [r for r in selected.not_run if r.op == "byte" and r.variant == "forward"]
    assert byte and all(
        r.not_run_reason is NotRunReason.COMPARISON_NOT_VALID for r in byte
    )


def test_hand_cases_needing_a_device_are_not_run_on_cpu(
    make_manifest: MakeManifest,
) -> None:
    """Device-mismatch checks are not_run (device_count) on the CPU itself."""
    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=ALL_CAPS, LEVEL=8)
    selected = select_cases(m, Selection(suites=("device_mismatch",)))
    assert not selected.runnable
    mine = [r for r in selected.not_run if r.suite == "device_mismatch"]
    assert mine and {r.not_run_reason for r in mine} == {NotRunReason.DEVICE_COUNT}


def test_get_case_rebuilds_specs(make_manifest: MakeManifest) -> None:
    """get_case(id) returns the same spec selection listed; unknown ids raise KeyError."""
    m = make_manifest(DTYPES={"float32": True}, CAPABILITIES=ALL_CAPS, LEVEL=4)
    selected = select_cases(m, Selection(op_globs=("add", "sort")))
    for spec in selected.runnable[::7]:
        assert get_case(spec.case_id) == spec
    for bad in ("opinfo/add/forward/float32/999", "opinfo/nope/forward/float32/0",
                "opinfo/add/forward/-/0", "views/nope/check/-/-", "not-an-id"):  # fmt: skip
        with pytest.raises(KeyError):
            get_case(bad)


def test_get_case_works_in_a_fresh_process() -> None:
    """A child process (xdist worker, warm pool) rebuilds a spec and seed from the id."""
    from torchcts_cases import case_seed

    code = (
        "from torchcts_cases import get_case, case_seed;"
        "print(get_case('opinfo/add/forward/float32/0').level,"
        " get_case('views/view_shares_storage/check/-/-').suite,"
        " case_seed('opinfo/add/forward/float32/0'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    seed = str(case_seed("opinfo/add/forward/float32/0"))
    assert out.stdout.split() == ["1", "views", seed]  # seeds never use salted hash()


def test_a_shallow_run_records_only_the_declines_of_its_own_depth(
    make_manifest: MakeManifest,
) -> None:
    """With outside cases counted (every run's plan), a case above the level is
    level_filtered whatever the manifest says of it: a level-1 run records only
    level-1 declines. The same cases are accounted for: the recorded and counted
    cases add up to what the level-8 selection records one by one."""
    m = make_manifest(
        DTYPES={"float32": True, "float16": False, "int64": True},
        CAPABILITIES=ALL_CAPS,
        OPS={"exclude": {"sin": "reason"}},
    )
    shallow = select_cases(m, Selection(level=1, record_outside=False))
    assert shallow.not_run and all(r.level == 1 for r in shallow.not_run)
    assert {r.not_run_reason for r in shallow.not_run} >= {
        NotRunReason.DTYPE_NOT_SUPPORTED,
        NotRunReason.OP_EXCLUDED,
    }
    everything = select_cases(m, Selection(level=8, record_outside=True))
    assert len(shallow.runnable) + len(shallow.not_run) + sum(
        shallow.outside.values()
    ) == len(everything.runnable) + len(everything.not_run)
    declined_at_one = {
        r.case_id
        for r in everything.not_run
        if r.level == 1 and r.not_run_reason is not NotRunReason.LEVEL_FILTERED
    }
    assert {r.case_id for r in shallow.not_run} == declined_at_one
