"""The out= forms of factories the Python functions reach only through ``out=``: the
window factories (``aten::hann_window.out`` ...) against CPU's values, and the
uninitialised factories (``empty_like.out``, ``empty_strided.out``,
``empty_permuted.out``, ``new_empty.out``, ``new_empty_strided.out``), whose values
are undefined: only the out's metadata and that the call returns it are judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case
from torchcts_cases.suites.factories import WINDOW_LENGTHS

SUITE = "factories"
A = torch.ops.aten

# overload -> its arguments after the length: symmetric and periodic windows, and
# the shape parameters of hamming (alpha, beta) and kaiser (beta)
WINDOW_OUTS: dict[str, tuple[Any, ...]] = {
    "hann_window.out": (),
    "hann_window.periodic_out": (False,),
    "hamming_window.out": (),
    "hamming_window.periodic_out": (False,),
    "hamming_window.periodic_alpha_out": (True, 0.5),
    "hamming_window.periodic_alpha_beta_out": (False, 0.6, 0.4),
    "blackman_window.out": (),
    "blackman_window.periodic_out": (False,),
    "bartlett_window.out": (),
    "bartlett_window.periodic_out": (False,),
    "kaiser_window.out": (),
    "kaiser_window.periodic_out": (False,),
    "kaiser_window.beta_out": (True, 8.0),
}


def _overload(name: str) -> Any:
    packet, _, overload = name.partition(".")
    return getattr(getattr(A, packet), overload)


@case(
    SUITE,
    "window_outs",
    3,
    dtypes=("float32", "float64"),
    surfaces=tuple(f"aten::{name}" for name in WINDOW_OUTS),
)
def window_outs(device: str, dtype: str | None) -> dict[str, Any]:
    """Each window factory's out= form writes the window into the out it is given
    (an empty out, resized), in its dtype, and returns that out."""
    kind = getattr(torch, dtype or "float32")
    out: dict[str, Any] = {}
    for name, rest in WINDOW_OUTS.items():
        for n in WINDOW_LENGTHS:
            given = torch.empty(0, dtype=kind, device=device)
            returned = _overload(name)(n, *rest, out=given)
            out[f"{name}[{n}]"] = given
            out[f"{name}[{n}] returns out"] = returned is given
    return out


EMPTY_OUTS = (
    "empty_like.out",
    "empty_strided.out",
    "empty_permuted.out",
    "new_empty.out",
    "new_empty_strided.out",
)


@case(
    SUITE,
    "empty_outs",
    3,
    dtypes=("float32", "int64", "bool"),
    source=ExpectedSource.LEGAL_OUTPUT,
    metadata_only=True,
    surfaces=tuple(f"aten::{name}" for name in EMPTY_OUTS),
)
def empty_outs(device: str, dtype: str | None) -> dict[str, Any]:
    """The uninitialised factories' out= forms resize a wrong-shape out to the
    requested size (their values are undefined: only metadata is judged) and return
    it."""
    kind = getattr(torch, dtype or "float32")
    template = torch.zeros(2, 3, dtype=kind, device=device)

    def given() -> torch.Tensor:
        return torch.empty(7, dtype=kind, device=device)  # a wrong shape, resized

    calls: dict[str, Callable[[torch.Tensor], Any]] = {
        "empty_like.out": lambda out: A.empty_like.out(template, out=out),
        "empty_strided.out": lambda out: A.empty_strided.out([2, 3], [1, 2], out=out),
        "empty_permuted.out": lambda out: A.empty_permuted.out(
            [2, 3, 4], [2, 0, 1], out=out
        ),
        "new_empty.out": lambda out: A.new_empty.out(template, [4, 5], out=out),
        "new_empty_strided.out": lambda out: A.new_empty_strided.out(
            template, [4, 5], [1, 4], out=out
        ),
    }
    observed: dict[str, Any] = {}
    for name, call in calls.items():
        out = given()
        returned = call(out)
        observed[name] = out
        observed[f"{name} returns out"] = returned is out
    return observed


CASES = (window_outs, empty_outs)
