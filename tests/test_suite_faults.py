"""simdev faults in the territory of the autograd, training, workloads and compile
suites fail the right case, with a mismatch naming what broke; the clean simdev passes
them all.

A fault is one simdev rule on the overload a real backend would get wrong (a backward
kernel, an optimizer update, the attention kernel, a kernel a compiled graph calls);
the expectation is the CPU run (eager CPU for compile).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_faults_helpers import clean_simdev, simdev_manifest, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import Manifest

NEW_SUITES = ("autograd", "training", "workloads", "compile")
NOT_ON_SIMDEV = {
    "training/dataloader_pin_memory/check/-/-",  # no pinned allocator
    # inductor generates no code for simdev (test_inductor_has_no_code_generator...)
    "compile/inductor_ops/check/-/-",
    "compile/inductor_mlp/check/-/-",
    "compile/inductor_dynamic_shapes/check/-/-",
}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    """A simdev manifest claiming every capability, in float32, float64, bfloat16."""
    return simdev_manifest(tmp_path, ("float32", "float64", "bfloat16"))


CLEAN_CASES = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if c.suite in NEW_SUITES and cid not in NOT_ON_SIMDEV and c.dtype != "float16"
)


@pytest.mark.parametrize("case_id", CLEAN_CASES)
def test_clean_simdev_passes_the_new_suites(case_id: str, manifest: Manifest) -> None:
    """Without faults simdev computes with the CPU's kernels: every case passes."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("simdev"))
    assert verdict.ok, verdict.mismatch


def test_wrong_backward_kernel_fails_gradcheck(manifest: Manifest) -> None:
    """A wrong tanh backward fails gradcheck on the device and the gradient check."""
    found = simdev_mismatch(
        "autograd/gradcheck/check/float64/-",
        manifest,
        {"op": "aten::tanh_backward*", "fault": "wrong_values", "magnitude": "large"},
    )
    assert found.startswith("gradcheck.gradcheck: expected bool True, got str")
    assert "Jacobian mismatch" in found


def test_wrong_optimizer_update_fails_adam(manifest: Manifest) -> None:
    """A wrong addcdiv_ (Adam's update of the weights) fails adam_steps, naming Adam."""
    found = simdev_mismatch(
        "training/adam_steps/check/-/-",
        manifest,
        {"op": "aten::addcdiv.out", "inplace": True, "fault": "wrong_values"},
    )
    assert found.startswith(
        "adam_steps.adam.params.0.weight: Tensor-likes are not close"
    )


def test_dropped_momentum_update_fails_sgd(manifest: Manifest) -> None:
    """An in-place update that is dropped (momentum buffers never move) fails SGD."""
    found = simdev_mismatch(
        "training/sgd_steps/check/-/-",
        manifest,
        {"op": "aten::add.out", "inplace": True, "fault": "drop_inplace"},
    )
    assert found.startswith("sgd_steps.sgd.")


def test_wrong_mask_handling_fails_sdpa_masks(manifest: Manifest) -> None:
    """A wrong bool-mask conversion (attention's where(mask, 0, -inf)) fails the
    masked attention case at the bool mask."""
    found = simdev_mismatch(
        "workloads/sdpa_masks/check/-/-",
        manifest,
        {"op": "aten::where.self*", "fault": "wrong_values", "magnitude": "large"},
    )
    # the shifted mask moves where attention's -inf lands: the mismatch says so
    assert found.startswith("sdpa_masks.bool_mask: NaN/Inf not where CPU has them")


def test_wrong_lstm_cell_fails_the_recurrent_workload(manifest: Manifest) -> None:
    """A wrong fused LSTM cell fails the embedding + LSTM/GRU case at the output."""
    found = simdev_mismatch(
        "workloads/embedding_lstm_gru/check/-/-",
        manifest,
        {"op": "aten::_thnn_fused_lstm_cell", "fault": "wrong_values"},
    )
    assert found.startswith("embedding_lstm_gru.out: Tensor-likes are not close")


def test_pin_memory_raises_not_implemented_on_simdev(manifest: Manifest) -> None:
    """simdev cannot pin (reason its manifest leaves pin_memory out): it says so."""
    case = prepare(get_case("training/dataloader_pin_memory/check/-/-"), manifest)
    with pytest.raises(NotImplementedError, match="PrivateUse1HooksInterface"):
        case.run_on("simdev")


def test_wrong_add_in_a_compiled_graph_fails_its_graph(manifest: Manifest) -> None:
    """A wrong add kernel, called by the aot_eager graph of OpInfo add, fails the
    compiled add graph at its first sample, with the values that differ."""
    found = simdev_mismatch(
        "compile/graph_add/check/-/-",
        manifest,
        {"op": "aten::add*", "dtype": "float32", "fault": "wrong_values"},
    )
    assert found.startswith("graph_add.sample_0: Tensor-likes are not close")
    assert "Greatest absolute difference" in found


def test_wrong_backward_in_a_compiled_model_fails_its_gradients(
    manifest: Manifest,
) -> None:
    """A wrong gelu backward, run by the MLP's compiled backward graph, fails the
    compiled MLP at the input gradient; its output (forward only) was right."""
    found = simdev_mismatch(
        "compile/mlp/check/-/-",
        manifest,
        {"op": "aten::gelu_backward*", "fault": "wrong_values", "magnitude": "large"},
    )
    assert found.startswith("mlp.input_grad: Tensor-likes are not close")


def test_wrong_kernel_after_a_graph_break_fails_the_resumed_branch(
    manifest: Manifest,
) -> None:
    """A wrong cos, run only by the frame that resumes after the .item() graph
    break, fails that branch of the graph-break case."""
    found = simdev_mismatch(
        "compile/graph_break/check/-/-",
        manifest,
        {"op": "aten::cos*", "fault": "wrong_values"},
    )
    assert found.startswith("graph_break.positive: Tensor-likes are not close")


@pytest.mark.parametrize(
    "case_id", ["compile/graph_break/check/-/-", "compile/dynamic_shapes/check/-/-"]
)
def test_clean_simdev_reports_the_compile_facts_of_cpu(
    case_id: str, manifest: Manifest
) -> None:
    """Graphs, breaks and recompiles on simdev are CPU's: Dynamo never traces
    simdev's Python kernels (a native backend's are opaque to it too)."""
    case = prepare(get_case(case_id), manifest)
    expected = case.reference()
    cpu = case.judge(expected, case.run_on("cpu"))
    simdev = case.judge(expected, case.run_on("simdev"))
    assert cpu.ok and simdev.ok
    assert simdev.note == cpu.note and "graph_breaks=none" not in str(cpu.note)[:60]


def test_inductor_has_no_code_generator_for_simdev(manifest: Manifest) -> None:
    """The reason simdev's manifest leaves inductor out: inductor has no code
    generator (device op overrides) for a Python PrivateUse1 device."""
    case = prepare(get_case("compile/inductor_ops/check/-/-"), manifest)
    with pytest.raises(Exception, match="simdev") as raised:
        case.run_on("simdev")
    assert type(raised.value).__name__ == "InductorError"
