"""The CPU-fallback watch: dispatcher routes and fallback warnings, observed on simdev
(whose cpu_fallback rules take a kernel away as a real backend lacks one)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import torch
import torchcts_simdev
from torchcts_cases import watch_fallbacks
from torchcts_cases.dispatch_recorder import FALLBACK, KERNEL, RouteRecorder
from torchcts_cases.fallback_watch import (
    fallback_key,
    kernel_route,
    warned_overloads,
)

MPS_WORDING = (
    "The operator 'aten::linalg_svd' is not currently supported on the MPS backend "
    "and will fall back to run on the CPU. This may have performance implications."
)


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    """Each test starts and ends on the clean profile."""
    torchcts_simdev.configure("clean")
    yield
    torchcts_simdev.configure("clean")


def _fall_back(*ops: str) -> None:
    torchcts_simdev.configure(
        {"name": "t", "rules": [{"op": list(ops), "fault": "cpu_fallback"}]}
    )


def test_routes_agree_with_the_dispatcher_table_for_every_overload() -> None:
    """kernel_route says what torch's own dispatch table says for PrivateUse1 (the
    table's debug text, an independent reading), overload for overload."""
    words = {
        "[kernel]": KERNEL,
        "[backend fallback]": FALLBACK,
        "[math kernel]": "CompositeImplicitAutograd",
    }
    checked = 0
    for name in torch._C._dispatch_get_all_op_names():
        rows = [
            row
            for row in torch._C._dispatch_dump_table(name).splitlines()
            if row.startswith("PrivateUse1:")
        ]
        route = kernel_route(name, "PrivateUse1")
        got = route if isinstance(route, str) or route is None else route.name
        if not rows:
            assert got is None, name
            continue
        row = rows[0]
        word = "[" + row.rsplit("[", 1)[1]
        if word == "[default backend kernel]":
            generic = "NonFunctional" in row
            expected: object = (
                "CompositeExplicitAutogradNonFunctional"
                if generic
                else "CompositeExplicitAutograd"
            )
        else:
            expected = words[word]
        assert got == expected, (name, row)
        checked += 1
    assert checked > 3000


def test_a_clean_run_has_no_fallback_and_a_taken_kernel_is_named() -> None:
    """torch.sin reaches simdev as aten::sin.out through aten::sin's generic kernel:
    the watch follows it there; CPU calls and clean overloads are not counted."""
    x = torch.tensor([0.5, 1.0, 2.0])
    with watch_fallbacks("simdev") as clean:
        (x.to("simdev").sin() + 1).sum().cpu()
    assert clean.overloads == ()
    _fall_back("aten::sin.out", "aten::sum.IntList_out")
    with warnings.catch_warnings(record=True), watch_fallbacks("simdev") as watch:
        out = (x.to("simdev").sin() + 1).sum().cpu()
        x.sin().sum()  # on the CPU: never a fallback
    assert watch.overloads == ("aten::sin.out", "aten::sum.IntList_out")
    assert torch.equal(out, (x.sin() + 1).sum())


def test_an_overload_that_raised_is_not_a_route_through_the_fallback() -> None:
    """An error fallback (MPS without its variable) computes nothing: the route
    recorder does not count it (a backend's own fallback warning still would)."""
    torchcts_simdev.configure(
        {
            "rules": [
                {"op": "aten::cos.out", "fault": "cpu_fallback"},
                {"op": "aten::cos.out", "fault": "not_implemented"},
            ]
        }
    )
    recorder = RouteRecorder("simdev", lambda n: kernel_route(n, "PrivateUse1"))
    x = torch.ones(2).to("simdev")
    with warnings.catch_warnings(), recorder, pytest.raises(NotImplementedError):
        warnings.simplefilter("ignore")
        x.cos()
    assert recorder.fell_back == set() and "aten::cos.out" in recorder.seen


def test_kernels_that_call_back_into_the_mode_do_not_recurse() -> None:
    """detach's kernel calls the innermost mode itself; followed once, it returns."""
    x = torch.ones(3, requires_grad=True).to("simdev")
    with watch_fallbacks("simdev") as watch:
        y = x.detach()
    assert watch.overloads == () and not y.requires_grad


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16])
def test_wrapped_numbers_of_followed_kernels_compute_as_on_cpu(
    dtype: torch.dtype,
) -> None:
    """A generic kernel that passes a number to a Tensor argument (x % 2 reaches the
    backend as remainder.Tensor with a wrapped number) runs under the watch with
    CPU's values and dtype: the mode gets a Python number there, which the overload
    alone refuses ("Expected a value of type 'Tensor'")."""
    host = torch.arange(-3, 6).to(dtype)
    calls = {
        "remainder": lambda t: t % 2,
        "remainder_float": lambda t: t.remainder(2.5),
        "fmod": lambda t: t.fmod(2),
        "where_scalar": lambda t: torch.where(t > 0, t, 2),
    }
    for name, call in calls.items():
        expected = call(host)
        with watch_fallbacks("simdev") as watch:
            got = call(host.to("simdev")).cpu()
        assert (got.dtype, got.tolist()) == (expected.dtype, expected.tolist()), name
        assert watch.overloads == ()


def test_fallback_warnings_are_named_and_shown_again() -> None:
    """A warning in PyTorch's fallback wording names its overload; every warning
    still reaches the caller's filters afterwards; warn_always is put back."""
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with watch_fallbacks("simdev") as watch:
            warnings.warn(MPS_WORDING, UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
    assert watch.overloads == ("aten::linalg_svd",)
    assert [str(w.message) for w in outer] == [MPS_WORDING, "something else"]
    assert not torch.is_warn_always_enabled()


def test_a_fallback_warning_under_an_error_filter_is_recorded_not_raised() -> None:
    """Warnings the caller makes errors stay errors, except fallback warnings: the
    record accounts for those, and the case is not turned into an error."""
    _fall_back("aten::sin.out")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with watch_fallbacks("simdev") as watch:
            torch.ones(2).to("simdev").sin()
        with pytest.raises(UserWarning), watch_fallbacks("simdev"):
            warnings.warn("a warning made an error", UserWarning, stacklevel=1)
    assert watch.overloads == ("aten::sin.out",)


def test_the_xpu_wordings_are_read_too() -> None:
    """XPU's fallback says "is falling back", its debug wording drops the quote."""
    assert warned_overloads(
        [
            "The operator 'aten::nonzero' is not currently supported on the XPU "
            "backend and will fall back to run on the CPU.",
            "The operator 'aten::cumsum.out on the XPU backend is falling back to "
            "run on the CPU.",
            "The operator 'aten::x' is not currently implemented for the MPS device.",
        ]
    ) == {"aten::nonzero", "aten::cumsum.out"}


@pytest.mark.parametrize(
    ("device", "key"),
    [("simdev", "PrivateUse1"), ("simdev:0", "PrivateUse1"), ("cpu", None)],
)
def test_only_devices_with_a_backend_fallback_are_watched(
    device: str, key: str | None
) -> None:
    """CPU (and CUDA) have no backend fallback; meta's is none; unknown names none."""
    assert fallback_key(device) == key
    assert fallback_key("meta") is None and fallback_key("nosuch") is None
    with warnings.catch_warnings(record=True), watch_fallbacks("cpu") as watch:
        warnings.warn(MPS_WORDING, UserWarning, stacklevel=1)
    assert watch.overloads == ()


BACKWARD_RAISES = """
import torch, torchcts_simdev
from torchcts_cases import watch_fallbacks
torchcts_simdev.configure({"name": "t", "rules": [
    {"op": "aten::where.self", "fault": "not_implemented"},
    {"op": "aten::mul.out", "fault": "cpu_fallback"}]})
x = torch.randn(3).to("simdev").requires_grad_()
with watch_fallbacks("simdev") as watch:
    loss = torch.clamp(x, -0.5, 0.5).sum()  # clamp's backward calls where.self
    try:
        torch.autograd.grad(loss, [x])
    except NotImplementedError as exc:
        print("raised:", str(exc)[:40])
    (x * 2).sum().backward()  # the engine still runs, and the mode is back after it
    (x * 3).sum()
print("fell back:", watch.overloads)
"""


def test_a_kernel_raising_in_a_backward_pass_is_an_exception_not_an_abort() -> None:
    """simdev's autograd thread inherits dispatch modes; an exception raised through
    the watch's mode there ended the process (SIGABRT). Under the watch it now
    arrives as the kernel's exception, and forward fallbacks are still seen."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BACKWARD_RAISES],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "raised: Could not run 'aten::where.self'" in done.stdout
    assert "fell back: ('aten::mul.out',)" in done.stdout


def test_a_route_follows_a_kernel_the_backend_registers_or_drops_later() -> None:
    """A route found while the generic kernel served an overload turns into the
    backend's kernel once the backend registers one (simdev's own_kernel rule), and
    back when it drops it: a stale route would run the generic kernel past it."""
    name = "aten::_foreach_add.List_out"
    assert (
        kernel_route(name, "PrivateUse1")
        is torch._C.DispatchKey.CompositeExplicitAutograd
    )
    torchcts_simdev.configure(
        {
            "name": "own",
            "rules": [{"op": name, "fault": "wrong_values", "own_kernel": True}],
        }
    )
    assert kernel_route(name, "PrivateUse1") == KERNEL
    torchcts_simdev.configure("clean")
    assert (
        kernel_route(name, "PrivateUse1")
        is torch._C.DispatchKey.CompositeExplicitAutograd
    )
