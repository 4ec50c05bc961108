"""The facts `torchcts-report explain` shows, captured in the worker when a case did
not pass, so the report never needs torch: the inputs (shape, dtype, strides, a few
values), what was expected and what came back, and the first mismatching elements
with their real values.

Everything is bounded (a few tensors, a few values, a few mismatches, short text), so
a failing record stays small whatever the backend returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

from torchcts_cases.compare import RaisedError

MAX_TENSORS = 6
MAX_VALUES = 4
MAX_MISMATCHES = 5
MAX_TEXT = 200
Tolerance = Callable[[str], tuple[float, float]]


def case_facts(
    inputs: object,
    expected: object,
    observed: object,
    tol: Tolerance,
    *,
    metadata_only: bool = False,
) -> dict[str, Any]:
    """Inputs, expected and observed summaries, and the first mismatching elements
    (values neither shown nor compared where only metadata is defined)."""
    facts: dict[str, Any] = {
        "inputs": summarize(inputs, ""),
        "expected": summarize(expected, "output", values=not metadata_only),
        "observed": summarize(observed, "output", values=not metadata_only),
    }
    if metadata_only:
        return facts
    found = first_mismatches(expected, observed, tol)
    if found is not None:
        facts["mismatches"] = found
    return facts


def summarize(obj: object, root: str, *, values: bool = True) -> list[dict[str, Any]]:
    """One entry per tensor, exception or plain value in `obj` (at most a few)."""
    out: list[dict[str, Any]] = []
    for path, value in _leaves(obj, root):
        if len(out) == MAX_TENSORS:
            out.append({"path": "...", "value": "more values not shown"})
            break
        out.append(_describe(path, value, values))
    return out


def first_mismatches(
    expected: object, observed: object, tol: Tolerance
) -> dict[str, Any] | None:
    """The first tensor pair of equal shape and dtype whose values differ: its path,
    the tolerance, the count of differing elements and the first few of them."""
    got = dict(_leaves(observed, "output"))
    for path, exp in _leaves(expected, "output"):
        obs = got.get(path)
        if not isinstance(exp, torch.Tensor) or not isinstance(obs, torch.Tensor):
            continue
        if exp.shape != obs.shape or exp.dtype != obs.dtype or exp.device != obs.device:
            continue
        if exp.layout != torch.strided or exp.device.type == "meta":
            continue
        found = _differing(path, exp, obs, tol)
        if found is not None:
            return found
    return None


def _differing(
    path: str, exp: torch.Tensor, obs: torch.Tensor, tol: Tolerance
) -> dict[str, Any] | None:
    exp = exp.detach().resolve_conj().resolve_neg()
    obs = obs.detach().resolve_conj().resolve_neg()
    name = str(exp.dtype).removeprefix("torch.")
    atol, rtol = tol(name)
    if exp.is_floating_point() or exp.is_complex():
        close = torch.isclose(obs, exp, atol=atol, rtol=rtol, equal_nan=True)
    else:
        close = obs == exp
    bad = (~close).nonzero()
    if not len(bad):
        return None
    rows = []
    for index in bad[:MAX_MISMATCHES].tolist():
        e, o = exp[tuple(index)].item(), obs[tuple(index)].item()
        row = {"index": index, "expected": _number(e), "got": _number(o)}
        if not isinstance(e, bool):
            row["abs_diff"] = _number(abs(o - e))
        rows.append(row)
    return {
        "path": path,
        "atol": atol,
        "rtol": rtol,
        "count": len(bad),
        "numel": exp.numel(),
        "first": rows,
    }


def _leaves(obj: object, path: str) -> Iterator[tuple[str, object]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list | tuple) and not isinstance(obj, torch.Size):
        if any(isinstance(v, torch.Tensor | dict | list | tuple) for v in obj):
            for i, value in enumerate(obj):
                yield from _leaves(value, f"{path}[{i}]")
        elif obj:
            yield path, obj
    else:
        yield path, obj


def _describe(path: str, value: object, values: bool = True) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        entry: dict[str, Any] = {
            "path": path,
            "shape": list(value.shape),
            "dtype": str(value.dtype).removeprefix("torch."),
            "device": value.device.type,
        }
        if value.layout == torch.strided:
            entry["stride"] = list(value.stride())
            if values and value.device.type != "meta":
                flat = value.detach().reshape(-1)[:MAX_VALUES]
                entry["values"] = [_number(v) for v in flat.resolve_conj().tolist()]
        else:
            entry["layout"] = str(value.layout).removeprefix("torch.")
        return entry
    if isinstance(value, RaisedError):
        return {
            "path": path,
            "raised": value.type_name,
            "message": _text(value.message),
        }
    if isinstance(value, BaseException):
        return {"path": path, "raised": type(value).__name__, "message": _text(value)}
    return {"path": path, "value": _text(repr(value))}


def _number(value: Any) -> Any:
    """JSON-safe: non-finite floats and complex numbers as text."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def _text(value: object) -> str:
    text = str(value)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + "..."
    # a lone surrogate from a backend message would make the record unwritable
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
