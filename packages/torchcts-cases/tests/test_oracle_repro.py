"""Oracle failure diagnostics and standalone repro scripts."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from torchcts_cases import (
    OracleUnavailable,
    get_case,
    oracle_failures_path,
    prepare,
    write_oracle_failure,
)
from torchcts_schema import Manifest, load_manifest

RunRepros = Callable[[Manifest, Sequence[str]], list[str]]  # conftest.run_repros


def test_oracle_failure_is_one_json_line_per_call(tmp_path: Path) -> None:
    """Records append to <key>_opinfo_oracle_failures_<pid>.jsonl, path-free."""
    spec = get_case("opinfo/add/forward/float32/0")
    home = str(Path.home())
    try:
        raise OracleUnavailable(f"could not build sample under {home}/x")
    except OracleUnavailable as exc:
        write_oracle_failure(tmp_path, "cpu_test", spec, exc)
        write_oracle_failure(tmp_path, "cpu_test", spec, exc)
    path = oracle_failures_path(tmp_path, "cpu_test")
    assert path.name == f"cpu_test_opinfo_oracle_failures_{os.getpid()}.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert (
        record["case_id"] == spec.case_id and record["type"] == "opinfo_oracle_failure"
    )
    assert home not in lines[0]


REPRO_CASES = (
    "opinfo/add/forward/float32/0",  # literal inputs
    "opinfo/matmul/forward/float32/0",
    "opinfo/add/inplace/float32/1",
    "opinfo/cat/error_inputs/-/0",
    "opinfo/_foreach_mul/forward/float32/0",  # a foreach list: its own OpInfo list
    "opinfo/_foreach_add/inplace/float32/3",
    "factories/windows/check/float64/-",
    "rng/geometric_distribution/check/float32/-",  # carries rng_stats' source
    "views/view_shares_storage/check/-/-",
    "mutation/inplace_returns_self/check/float32/-",
    "out_semantics/out_dtype_rules/check/-/-",
    "memory_formats/channels_last_conversion/check/-/-",
    "copies/roundtrip/check/float32/-",
    "factories/ranges/check/float32/-",
    "rng/same_seed_same_stream/check/-/-",
    "serialization/save_load_roundtrip/check/float32/-",
    "reviewed/division_signs/check/-/-",
    "compile/dynamic_shapes/check/-/-",  # eager expectation, reported compile facts
    "compile/graph_layer_norm/check/-/-",  # OpInfo samples: find_op's stand-in
)  # device_mismatch cases need a second device: on CPU alone they mean nothing


def test_repro_scripts_run_standalone(tmp_path: Path, run_repros: RunRepros) -> None:
    """Repro scripts import torch only, rerun their case on the device and judge it
    against CPU: on CPU itself every one matches and exits 0."""
    manifest_path = tmp_path / "m.py"
    manifest_path.write_text('DEVICE = "cpu"\n')
    run_repros(load_manifest(manifest_path), REPRO_CASES)


def test_large_inputs_replay_by_seed(tmp_path: Path) -> None:
    """Inputs over the literal limit are rebuilt from the case seed instead."""
    manifest_path = tmp_path / "m.py"
    manifest_path.write_text('DEVICE = "cpu"\n')
    case = prepare(
        get_case("opinfo/matmul/forward/float32/0"), load_manifest(manifest_path)
    )
    source = case.repro_source("cpu", "my_backend", {"fault_profile": "none"})
    assert "import my_backend" in source and "torchcts_configure" in source
    assert "torch.manual_seed(" in source or "torch.tensor(" in source


@pytest.mark.parametrize(
    "case_id",
    [
        "opinfo/masked.var/forward/float16/5",
        "opinfo/nn.functional.max_unpool2d.grad/backward/float32/3",
    ],
)
def test_replayed_inputs_equal_the_case_inputs(tmp_path: Path, case_id: str) -> None:
    """The seed-replay form of a repro rebuilds exactly the tensors the case ran on."""
    import torch

    manifest_path = tmp_path / "m.py"
    manifest_path.write_text('DEVICE = "cpu"\n')
    case = prepare(get_case(case_id), load_manifest(manifest_path))
    expected = case.sample()
    monkey = pytest.MonkeyPatch()
    monkey.setattr(
        "torchcts_cases.repro.LITERAL_MAX_NUMEL", -1
    )  # force the replay form
    try:
        source = case.repro_source("cpu", None, {})
    finally:
        monkey.undo()
    assert "seed_everything(" in source
    torch.manual_seed(99)  # the script must not depend on the stream it starts from
    namespace: dict[str, object] = {"__name__": "repro"}
    exec(compile(source, "repro.py", "exec"), namespace)
    assert torch.equal(namespace["input"], expected.input)  # type: ignore[arg-type]
    assert len(namespace["args"]) == len(expected.args)  # type: ignore[arg-type]
