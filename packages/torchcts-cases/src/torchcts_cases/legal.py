"""Legal-output checks: ops with more than one valid answer.

- ``metadata``: nondeterministic or uninitialised outputs (random ops, ``empty``): only
  shape, dtype and strides are comparable.
- ``unordered``: ``unique``'s order is not defined when unsorted: compare the values as
  a sorted set, the other outputs by metadata.
- ``ties``: sort, topk, max/min with a dim, ...: values must match; indices may differ
  from CPU only where they select equal values from the input.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from torchcts_cases.compare import RaisedError, Tolerance, compare


class _HasSample(Protocol):
    op: Any

    def sample(self) -> Any: ...


def judge_legal(
    mode: str, case: _HasSample, expected: Any, observed: Any, tol: Tolerance
) -> str | None:
    """None when `observed` is a legal output for this case, else the difference."""
    if isinstance(expected, RaisedError) or isinstance(observed, RaisedError):
        return compare(expected, observed, tolerance=tol)
    if mode == "metadata":
        return compare(expected, observed, metadata_only=True, tolerance=tol)
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
