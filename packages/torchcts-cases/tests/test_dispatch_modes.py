"""TorchCTS's dispatch modes run their hooks eagerly without importing torch._dynamo:
TorchDispatchMode's own marking imports it at a hook's first call (about a CPU-second
in a run that compiles nothing). Checked in a fresh interpreter, where nothing else
has imported it yet, and with the hooks still doing their work."""

from __future__ import annotations

import subprocess
import sys

import torch

_SCRIPT = """
import sys
import torch
from torchcts_cases.dispatch_recorder import OverloadRecorder
from torchcts_cases.overload_capture import CallCapture
from torchcts_cases.upstream_defects import bystander_mode

assert "torch._dynamo" not in sys.modules, "imported before any mode ran"
a = torch.ones(3)
recorder = OverloadRecorder()
with recorder:
    torch.add(a, 2)
capture = CallCapture("mul.Tensor")
with capture:
    torch.mul(a, a)
with bystander_mode():
    out = torch.sub(a, 1)
assert "aten::add.Tensor" in recorder.seen, recorder.seen
assert list(capture.calls) == ["mul.Tensor"], capture.calls
assert out.tolist() == [0.0, 0.0, 0.0]
print("dynamo imported:", "torch._dynamo" in sys.modules)
"""


def test_modes_record_without_importing_dynamo() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "dynamo imported: False"


def test_a_mode_hook_stays_eager_under_compile() -> None:
    """Marked opaque, the hook still runs for the compiled code's calls (Dynamo
    skips its frame instead of tracing it into the graph)."""
    from torchcts_cases.dispatch_recorder import OverloadRecorder

    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    compiled = torch.compile(double, backend="eager")
    recorder = OverloadRecorder()
    with recorder:
        out = compiled(torch.ones(2))
    assert out.tolist() == [2.0, 2.0]
    assert "aten::mul.Tensor" in recorder.seen
