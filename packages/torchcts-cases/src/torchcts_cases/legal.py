"""Legal-output checks: ops with more than one valid answer.

- ``metadata``: nondeterministic or uninitialised outputs (random ops, ``empty``): only
  shape and dtype are comparable, and strides where they are the op's contract
  (`strides_are_contract`).
- ``unordered``: ``unique``'s order is not defined when unsorted: compare the values as
  a sorted set, the other outputs by metadata.
- ``ties``: sort, topk, max/min with a dim, ...: values must match; indices may differ
  from CPU only where they select equal values from the input.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from torchcts_cases.compare import RaisedError, Tolerance, compare

# Legal-output ops whose result strides are contract although their values are not:
# the strides are an argument (empty_strided, new_empty_strided, empty_permuted's
# physical order), or documented: empty and new_empty return contiguous tensors, the
# *_like factories follow memory_format=torch.preserve_format (the input's strides when
# it is non-overlapping and dense), and the in-place random fills whose OpInfo entries
# call ``cauchy_``, ``uniform_``, ... return self. Elsewhere PyTorch leaves strides to
# the backend: dropout's output and the gradient of an expanded input, bernoulli,
# normal, multinomial, attention, fractional pooling, rrelu and the low-rank
# factorizations (PyTorch's own tests compare outputs without strides, assertEqual's
# default), so a backend choosing other strides there is not wrong.
STRIDE_CONTRACT_OPS = frozenset(
    {
        "empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
        "new_empty_strided", "rand_like", "randn_like", "randint_like",
        "cauchy", "exponential", "geometric", "log_normal", "normal.in_place",
        "uniform",
    }
)  # fmt: skip
# variants whose result is a tensor the caller gave (self, out=), strides and all
_CALLER_LAYOUT_VARIANTS = frozenset({"inplace", "out"})


class _HasSample(Protocol):
    op: Any
    spec: Any

    def sample(self) -> Any: ...


def strides_are_contract(op_segment: str, variant: str) -> bool:
    """Whether a legal-output case judges result strides: an in-place or out= result
    is the caller's tensor, and a few ops promise their layout (`STRIDE_CONTRACT_OPS`);
    a backward case's are not (``torch.autograd.grad`` promises no gradient layout)."""
    if variant in _CALLER_LAYOUT_VARIANTS:
        return True
    return variant != "backward" and op_segment in STRIDE_CONTRACT_OPS


def judge_legal(
    mode: str, case: _HasSample, expected: Any, observed: Any, tol: Tolerance
) -> str | None:
    """None when `observed` is a legal output for this case, else the difference."""
    if isinstance(expected, RaisedError) or isinstance(observed, RaisedError):
        return compare(expected, observed, tolerance=tol)
    if mode == "metadata":
        strides = strides_are_contract(case.spec.op, case.spec.variant)
        return compare(
            expected, observed, metadata_only=True, strides=strides, tolerance=tol
        )
    if mode == "unordered":
        return _unordered(expected, observed, tol)
    if mode == "ties":
        return _ties(case, expected, observed, tol)
    raise ValueError(f"unknown legal-output mode {mode!r}")


def _unordered(expected: Any, observed: Any, tol: Tolerance) -> str | None:
    meta = compare(expected, observed, metadata_only=True, tolerance=tol)
    if meta:
        return meta
    first_e = expected[0] if isinstance(expected, tuple | list) else expected
    first_o = observed[0] if isinstance(observed, tuple | list) else observed
    return compare(
        torch.sort(first_e.flatten()).values,
        torch.sort(first_o.flatten()).values,
        tolerance=tol,
        path="output (as a sorted set)",
    )


def _ties(case: _HasSample, expected: Any, observed: Any, tol: Tolerance) -> str | None:
    exact = compare(expected, observed, tolerance=tol)
    if exact is None:
        return None
    key = None
    if isinstance(expected, dict) and "output" in expected:
        key = "output"
        rest = {k: v for k, v in expected.items() if k != key}
        found = compare(rest, {k: observed.get(k) for k in rest}, tolerance=tol)
        if found:
            return found
        expected, observed = expected[key], observed[key]
    meta = compare(expected, observed, metadata_only=True, tolerance=tol)
    if meta:
        return meta
    sample = case.sample()
    source = sample.input
    if not isinstance(source, torch.Tensor) or source.dim() == 0:
        return exact
    dim = _dim(case.op.name, sample)
    if isinstance(expected, tuple | list) and len(expected) == 2:
        values_e, _ = expected
        values_o, idx_o = observed
        found = compare(values_e, values_o, tolerance=tol, path="output[0] (values)")
        if found:
            return found
        picked = _gather(source, idx_o, dim)
        return compare(
            values_o, picked, tolerance=tol, path="output[1] (indices select values)"
        )
    if isinstance(expected, torch.Tensor) and not expected.is_floating_point():
        return compare(
            _gather(source, expected, dim),
            _gather(source, observed, dim),
            tolerance=tol,
            path="output (indices select values)",
        )
    return exact


def _dim(name: str, sample: Any) -> int:
    args, kwargs = sample.args, sample.kwargs
    if "dim" in kwargs:
        return int(kwargs["dim"])
    position = 1 if name in ("topk", "kthvalue") else 0
    if len(args) > position and isinstance(args[position], int):
        return int(args[position])
    return 0 if name == "msort" else -1


def _gather(source: torch.Tensor, indices: torch.Tensor, dim: int) -> torch.Tensor:
    dim = dim % source.dim()
    if indices.dim() < source.dim():
        indices = indices.unsqueeze(dim)
        return torch.take_along_dim(source, indices.long(), dim).squeeze(dim)
    return torch.take_along_dim(source, indices.long(), dim)
