"""The compile suite: its expectation is eager CPU, graph breaks and recompiles are
counted as Dynamo documents them and reported without being judged (unless the
manifest claims compile_fullgraph), and wrong compiled values fail naming where.

Every case also passes on CPU in test_suites.py (CPU validation); simdev faults in
the suite's territory are in the top-level tests/test_suite_faults.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torchcts_cases import Selection, get_case, prepare, select_cases
from torchcts_cases.suites import all_hand_cases
from torchcts_cases.suites.compile import (
    Compiled,
    _branchy,
    _dynamic_fn,
    eager,
    facts,
)
from torchcts_schema import (
    CAPABILITY_NAMES,
    ExpectedSource,
    Manifest,
    NotRunReason,
)

MakeManifest = Callable[..., Manifest]


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """A CPU manifest claiming every capability."""
    return make_manifest(CAPABILITIES=list(CAPABILITY_NAMES))


def _judged(case_id: str, manifest: Manifest) -> tuple[Any, dict[str, Any]]:
    """The prepared case and what it observed compiled on CPU."""
    case = prepare(get_case(case_id), manifest)
    observed = case.run_on("cpu")
    assert isinstance(observed, dict)
    return case, observed


def test_the_expectation_is_eager_cpu(manifest: Manifest) -> None:
    """The reference is built with nothing compiled (no graph at all); the run on the
    device compiles one graph per sample."""
    case, observed = _judged("compile/graph_add/check/-/-", manifest)
    expected = case.reference()
    assert isinstance(expected, dict)
    assert expected["compile"] == {"graphs": 0, "graph_breaks": "none", "recompiles": 0}
    assert observed["compile"]["graphs"] == 2
    assert case.spec.expected_source is ExpectedSource.CPU_REFERENCE


def test_graph_breaks_are_reported_not_judged(manifest: Manifest) -> None:
    """Breaks and recompiles other than CPU's still pass; the verdict's note (the
    record's detail) says what they were."""
    case, observed = _judged("compile/mlp/check/-/-", manifest)
    observed["compile"] = {"graphs": 3, "graph_breaks": "2: a reason", "recompiles": 4}
    verdict = case.judge(case.reference(), observed)
    assert verdict.ok, verdict.mismatch
    assert verdict.note == (
        "reported, not judged: compile.graphs=3, compile.graph_breaks=2: a reason, "
        "compile.recompiles=4"
    )


def test_a_wrong_compiled_value_fails_naming_the_graph(manifest: Manifest) -> None:
    """A compiled result off by 1e-3 fails, naming the op's graph and sample."""
    case, observed = _judged("compile/graph_softmax/check/-/-", manifest)
    observed["sample_1"] = observed["sample_1"] + 1e-3
    verdict = case.judge(case.reference(), observed)
    assert not verdict.ok
    assert (verdict.mismatch or "").startswith(
        "graph_softmax.sample_1: Tensor-likes are not close"
    )


def test_fullgraph_judges_breaks_and_recompiles(manifest: Manifest) -> None:
    """Claimed compile_fullgraph: a graph break or a recompile fails, with the
    reason Dynamo gave."""
    case, observed = _judged("compile/fullgraph/check/-/-", manifest)
    expected = case.reference()
    assert case.judge(expected, observed).ok
    observed["attention"]["graph_breaks"] = "1: Unsupported Tensor.item() call"
    assert (case.judge(expected, observed).mismatch or "") == (
        "fullgraph.attention.graph_breaks: expected 'none', got "
        "'1: Unsupported Tensor.item() call'"
    )
    observed["attention"]["graph_breaks"] = "none"
    observed["dynamic_shapes"]["recompiles"] = 2
    assert (case.judge(expected, observed).mismatch or "") == (
        "fullgraph.dynamic_shapes.recompiles: expected 0, got 2"
    )


def test_breaks_and_recompiles_are_counted_as_dynamo_documents() -> None:
    """.item() breaks the graph (the function before it, then a resumed frame); the
    resumed frame guards on the value read, so the other branch recompiles it;
    dynamic=True compiles once for three sizes, automatic dynamic shapes twice."""
    branchy = Compiled(_branchy)
    branchy(torch.ones(4, 3))
    assert facts(branchy) == {
        "graphs": 2,
        "graph_breaks": (
            "1: Unsupported Tensor.item() call with capture_scalar_outputs=False"
        ),
        "recompiles": 0,
    }
    branchy(-torch.ones(4, 3))
    assert (branchy.graphs, branchy.recompiles) == (3, 1)
    w = torch.ones(6, 4)
    for dynamic, graphs in ((True, 1), (None, 2)):
        run = Compiled(_dynamic_fn, dynamic=dynamic)
        for rows in (3, 5, 8):
            run(torch.ones(rows, 6), w)
        assert (run.graphs, run.recompiles) == (graphs, graphs - 1)


def test_nothing_compiles_inside_eager() -> None:
    """Inside `eager` the function runs as written: no graph, no break."""
    with eager():
        run = Compiled(_branchy)
        out = run(torch.ones(2))
    assert torch.equal(out, (torch.ones(2).sin() * 2).cos())
    assert facts(run) == {"graphs": 0, "graph_breaks": "none", "recompiles": 0}


def test_unclaimed_compile_paths_are_not_run_with_their_reason(
    make_manifest: MakeManifest,
) -> None:
    """compile claimed without inductor and compile_fullgraph: those cases are
    not_run (capability), the aot_eager cases run."""
    caps = [c for c in CAPABILITY_NAMES if c not in ("inductor", "compile_fullgraph")]
    m = make_manifest(CAPABILITIES=caps)
    selected = select_cases(m, Selection(level=8, suites=("compile",)))
    reasons = {r.case_id: (r.not_run_reason, r.detail) for r in selected.not_run}
    for name in ("inductor_ops", "inductor_mlp", "inductor_dynamic_shapes"):
        assert reasons[f"compile/{name}/check/-/-"] == (
            NotRunReason.CAPABILITY_NOT_DECLARED,
            "capability inductor not in CAPABILITIES",
        )
    assert reasons["compile/fullgraph/check/-/-"][0] is (
        NotRunReason.CAPABILITY_NOT_DECLARED
    )
    runnable = {s.case_id for s in selected.runnable}
    assert len(runnable) == 17 and "compile/dynamic_shapes/check/-/-" in runnable


def test_level_one_is_aot_eager_only() -> None:
    """Level 1 stays fast: no inductor case, a handful of aot_eager ones."""
    level_one = [c for c in all_hand_cases().values()
                 if c.suite == "compile" and c.level == 1]  # fmt: skip
    assert level_one and all(c.capability == "compile" for c in level_one)
    assert len(level_one) <= 6
