"""Reviewed recipes for overloads whose arguments must agree with each other, and the
index build's guard against kernels that read memory they never wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torchcts_cases
from torchcts_cases import overload_index
from torchcts_cases.overload_capture import copy_call
from torchcts_cases.overload_inputs import schema_call
from torchcts_cases.overload_recipes import RECIPES, recipe_call, recipe_dtype
from torchcts_cases.overload_schema import op_overload
from torchcts_cases.transfer import tensors_in
from torchcts_schema import DTYPE_NAMES, Manifest


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes (NaN compares equal to the same NaN)."""
    return t.reshape(-1).contiguous().view(torch.uint8)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipe_rebuilds_the_same_call_and_cpu_accepts_it(name: str) -> None:
    """Two builds give equal arguments (a case rebuilds its call from its id), the
    dtype naming the cases is a known one, and the CPU runs the overload on them."""
    first, second = recipe_call(name), recipe_call(name)
    a, b = tensors_in(list(first)), tensors_in(list(second))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):  # bit for bit (NaN where NaN)
        assert x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride()
        assert torch.equal(_bytes(x), _bytes(y))
    assert recipe_dtype(name) in DTYPE_NAMES
    args, kwargs = copy_call(first)
    op_overload(name)(*args, **kwargs)


def test_a_kernel_reading_memory_it_never_wrote_is_not_generated() -> None:
    """_weight_norm_interface on a weight its norms do not fit (schema plan 0)
    returns norms past the first rows that it never wrote: the CPU check runs with
    glibc's malloc filling fresh blocks differently each time, so the two runs
    disagree and the call is refused, whatever the memory held before (a rebuild of
    the index gives the same shard)."""
    call = schema_call("_weight_norm_interface", 0)
    name = "_weight_norm_interface"
    problem = overload_index._cpu_problem("call", name, name, call)
    assert problem is not None
    assert problem.startswith("two CPU runs disagree (nondeterministic, or it reads")
    assert "Greatest" not in problem  # no numbers, which differ from run to run
    fitting = overload_index._cpu_problem("call", name, name, schema_call(name, 1))
    assert fitting is None


@pytest.mark.parametrize(
    "case_id",
    [
        "aten/_fused_adam_/writes/float32/0",  # several written arguments
        "aten/_foreach_addcdiv_.Tensor/inplace/float32/0",  # self is a list
    ],
)
def test_a_repro_of_the_new_kinds_runs_on_its_own(tmp_path: Path, case_id: str) -> None:
    """The standalone script of a multi-write case and of a foreach in-place case
    (recipe-built calls) runs with torch alone and finds the CPU agreeing with
    itself."""
    manifest = Manifest(path=Path("m"), digest="", device="cpu", backend_name="cpu")
    case = torchcts_cases.prepare(torchcts_cases.get_case(case_id), manifest)
    script = tmp_path / "repro.py"
    script.write_text(case.repro_source("cpu", None, {}))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did not reproduce" in done.stdout
