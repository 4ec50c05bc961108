"""simdev registers a kernel of its own per overload, and a cpu_fallback rule takes one
away, so the dispatcher and a warning report a CPU fallback as on a real backend."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import pytest
import torch
import torchcts_simdev
from torchcts_simdev import ProfileError, load_profile

Inject = Callable[..., torchcts_simdev.FaultProfile]
KEY = "PrivateUse1"


def _served_by(name: str) -> str:
    """How the dispatcher's own table says `name` is served on simdev."""
    table = torch._C._dispatch_dump_table(name)
    (line,) = [row for row in table.splitlines() if row.startswith(f"{KEY}:")]
    return line.rsplit("[", 1)[1].rstrip("]")


def _fallback_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "fall back" in str(w.message)]


def test_clean_simdev_serves_every_overload_with_a_kernel_of_its_own() -> None:
    """Overloads that reach the backend have a simdev kernel; the fallback remains."""
    for name in ("aten::sin.out", "aten::add.out", "aten::empty.memory_format"):
        assert _served_by(name) == "kernel", name
    assert torch._C._dispatch_has_backend_fallback(torch._C.DispatchKey.PrivateUse1)
    assert _served_by("aten::matmul") == "math kernel"  # generic kernels stay generic


def test_cpu_fallback_rule_sends_the_overload_to_the_backend_fallback(
    inject: Inject,
) -> None:
    """The overload loses its kernel, computes the CPU's values and warns in the MPS
    wording once, or every time under set_warn_always; clean gives it back."""
    x = torch.tensor([0.5, -1.0, 2.0])
    inject(op="aten::sin.out", fault="cpu_fallback", note="no sine kernel")
    assert _served_by("aten::sin.out") == "backend fallback"
    assert _served_by("aten::cos.out") == "kernel"
    fell_back = torchcts_simdev.registration.register()
    fell_back._warned = False  # the warning is once per process: start this test fresh
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = x.to("simdev").sin().cpu()
        x.to("simdev").sin()
        first = _fallback_warnings(caught)
        torch.set_warn_always(True)
        try:
            x.to("simdev").sin()
        finally:
            torch.set_warn_always(False)
    assert torch.equal(got, x.sin())
    assert first == [
        "The operator 'aten::sin.out' is not currently supported on the simdev "
        "backend and will fall back to run on the CPU. This may have performance "
        "implications."
    ]
    assert len(_fallback_warnings(caught)) == 2
    torchcts_simdev.configure("clean")
    assert _served_by("aten::sin.out") == "kernel"


def test_other_faults_still_apply_to_a_fallen_back_overload(inject: Inject) -> None:
    """A cpu_fallback rule is no per-call fault: a later rule on the op still hits."""
    torchcts_simdev.configure(
        {
            "rules": [
                {"op": "aten::sin.out", "fault": "cpu_fallback"},
                {"op": "aten::sin.out", "fault": "wrong_values", "magnitude": "large"},
            ]
        }
    )
    x = torch.tensor([0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not torch.allclose(x.to("simdev").sin().cpu(), x.sin())
    assert _served_by("aten::sin.out") == "backend fallback"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {"op": "aten::sin.out", "fault": "cpu_fallback", "dtype": "float32"},
            "rules[0].dtype: cpu_fallback applies to whole overloads",
        ),
        (
            {"op": "aten::sin.out", "fault": "cpu_fallback", "inplace": True},
            "rules[0].inplace: cpu_fallback applies to whole overloads",
        ),
    ],
)
def test_cpu_fallback_refuses_per_call_keys(
    rule: dict[str, object], message: str
) -> None:
    """Dispatch picks a kernel per overload, so per-call narrowing is an error."""
    with pytest.raises(ProfileError, match=re.escape(message)):
        load_profile({"rules": [rule]})


def test_cpu_fallback_on_an_overload_without_a_simdev_kernel_is_refused() -> None:
    """addr has a generic kernel that would win over a fallback: naming it is an
    error, not a rule that silently changes nothing."""
    with pytest.raises(ProfileError, match=r"rules\[0\]\.op: matches no overload"):
        torchcts_simdev.configure(
            {"rules": [{"op": "aten::addr", "fault": "cpu_fallback"}]}
        )
    assert torchcts_simdev.active_profile().name == "clean"
    assert _served_by("aten::sin.out") == "kernel"
