"""Stress on shapes and strides: zero-size tensors, high-rank tensors, overlapping and
expanded strides, each through elementwise ops, reductions, matmul and copies.

Kernels are written and tested for the common case; what breaks on a real backend is
the edge of the shape space: a matmul with an empty inner dimension that leaves its
output uninitialised instead of zero, a reduction of an empty dim that returns garbage
instead of raising, an index calculator limited to a few dimensions, a kernel that
reads an expanded (stride-0) or overlapping input as if it were dense, an in-place op
on an expanded tensor that silently writes one element several times. The expectation
is the CPU run of the same check; an error is recorded as ``raises <type>``, so a
device that raises what the CPU raises (the same exception type) agrees with it.
Values are small integers wherever the op allows, so most comparisons are exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case, storage_id

SUITE = "stress"
ZERO_SHAPES = ((0,), (0, 5), (3, 0, 2), (2, 0), (0, 0))
RANKS = (8, 10, 12, 20)
WIDE = 12  # dims of size 2 (at most 4096 elements); the rest of a rank's dims are 1


def _stress(name: str, level: int = 7, **kwargs: Any) -> Callable[..., Any]:
    """A case of this suite, judged against the CPU run of the same check."""
    return case(SUITE, name, level, source=ExpectedSource.CPU_REFERENCE, **kwargs)


def outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or ``"raises <type>"`` when it raises: the same type agrees."""
    try:
        return fn()
    except Exception as exc:
        return f"raises {type(exc).__name__}"


def _ints(shape: tuple[int, ...], device: str, mod: int = 7) -> torch.Tensor:
    """0, 1, ..., mod-1, 0, ... in float32 with `shape`, built on CPU and moved."""
    numel = 1
    for size in shape:
        numel *= size
    host = (torch.arange(numel) % mod).to(torch.float32).reshape(shape)
    return host.to(device)


@_stress("zero_size_elementwise", surfaces=("aten::add.Tensor", "aten::exp"))
def zero_size_elementwise(device: str, dtype: str | None) -> dict[str, Any]:
    """Unary, binary (broadcasting), comparison, where, casts and in-place ops on
    tensors with no elements keep shape, dtype and strides; mismatched broadcasting
    raises as on CPU."""
    out: dict[str, Any] = {}
    for shape in ZERO_SHAPES:
        x = torch.zeros(shape, device=device)
        last = torch.ones(shape[-1:], device=device)
        out[str(shape)] = {
            "stride": list(x.stride()),
            "neg_exp": (-x).exp(),
            "broadcast_add": x + last,
            "compare": x > 0,
            "where": torch.where(x > 0, x, last),
            "cast": x.to(torch.int64) + 1,
            "inplace_returns_self": x.add_(1) is x,
            "transposed_contiguous": x.transpose(0, -1).contiguous(),
            "full_like": torch.full_like(x, 3.0),
        }
    wide = torch.zeros(0, 1, device=device)
    out["broadcast_to_empty"] = wide + torch.ones(1, 5, device=device)
    out["broadcast_3d"] = torch.zeros(3, 0, 2, device=device) * torch.ones(
        3, 1, 2, device=device
    )
    out["broadcast_mismatch"] = outcome(
        lambda: torch.zeros(0, 5, device=device) + torch.ones(3, 5, device=device)
    )
    return out


@_stress("zero_size_reductions", surfaces=("aten::sum.IntList_out", "aten::amax"))
def zero_size_reductions(device: str, dtype: str | None) -> dict[str, Any]:
    """Reductions over an empty dim return their identity (sum 0, prod 1, logsumexp
    -inf, mean NaN, all True); amax, max and argmax over an empty dim raise as on CPU
    (IndexError or RuntimeError); over a non-empty dim they return empty results."""
    e = torch.zeros(0, 5, device=device)
    f = torch.zeros(3, 0, 2, device=device)
    deep = torch.zeros((2, 0) + (1,) * 8, device=device)  # rank 10 with a zero dim
    return {
        "sum": e.sum(),
        "sum_dim0": e.sum(0),
        "sum_dim1": e.sum(1),
        "int_sum": e.to(torch.int64).sum(0),
        "prod_dim0": e.prod(0),
        "mean_dim0": e.mean(0),
        "logsumexp_dim0": e.logsumexp(0),
        "norm": e.norm(),
        "any_all": [e.bool().any(), e.bool().all()],
        "count_nonzero": torch.count_nonzero(e),
        "cumsum": e.cumsum(0),
        "softmax": e.softmax(0),
        "amax_dim1": e.amax(1),
        "amax_dim0": outcome(lambda: e.amax(0)),
        "amax_all": outcome(lambda: e.amax()),
        "max_dim0": outcome(lambda: list(e.max(0))),
        "max_dim1": list(e.max(1)),
        "argmax_all": outcome(lambda: e.argmax()),
        "argmax_dim1": e.argmax(1),
        "min_all": outcome(lambda: e.min()),
        "f_sum_dim1": f.sum(1),
        "f_sum_dims02": f.sum((0, 2)),
        "f_amax_dim1": outcome(lambda: f.amax(1)),
        "f_amax_dims02": f.amax((0, 2)),
        "deep_sum": deep.sum((1, 3, 5)),
        "deep_amax": outcome(lambda: deep.amax(1)),
    }


@_stress("zero_size_matmul_cat", surfaces=("aten::mm", "aten::bmm", "aten::cat"))
def zero_size_matmul_cat(device: str, dtype: str | None) -> dict[str, Any]:
    """Matmul with an empty inner dimension is all zeros (addmm: beta * input), with
    an empty outer one empty; cat and stack accept empty pieces (and the legacy 1-D
    empty tensor); mismatched shapes raise as on CPU."""

    def ones(*shape: int) -> torch.Tensor:
        return torch.ones(shape, device=device)

    return {
        "mm_empty_rows": ones(0, 5) @ ones(5, 3),
        "mm_empty_inner": ones(3, 0) @ ones(0, 4),
        "mm_empty_cols": ones(3, 5) @ ones(5, 0),
        "bmm_empty_inner": ones(2, 3, 0).bmm(ones(2, 0, 4)),
        "dot_empty": ones(0) @ ones(0),
        "mv_empty_inner": ones(3, 0) @ ones(0),
        "addmm_empty_inner": torch.addmm(
            torch.full((3, 4), 2.0, device=device), ones(3, 0), ones(0, 4), beta=0.5
        ),
        "matmul_empty_batch": ones(0, 3, 4) @ ones(4, 2),
        "linear_empty_batch": torch.nn.functional.linear(
            ones(0, 4), ones(3, 4), ones(3)
        ),
        "mm_mismatch": outcome(lambda: ones(3, 0) @ ones(1, 4)),
        "cat_empty_first": torch.cat([ones(0, 5), ones(2, 5)]),
        "cat_middle_dim": torch.cat([ones(3, 0, 2), ones(3, 1, 2)], dim=1),
        "cat_all_empty": torch.cat([ones(0, 5), ones(0, 5)], dim=1),
        "cat_legacy_empty": torch.cat([ones(0), ones(2, 3)]),
        "cat_mismatch": outcome(lambda: torch.cat([ones(0, 5), ones(2, 4)])),
        "stack_empty": torch.stack([ones(0, 5), ones(0, 5)]),
    }


def _shape(rank: int) -> tuple[int, ...]:
    """2 on the first WIDE dims, 1 after: no two dims of size 2 coalesce once
    permuted, and a rank-20 tensor still has 4096 elements."""
    return tuple(2 if d < WIDE else 1 for d in range(rank))


def _perm(rank: int) -> list[int]:
    """A permutation that moves every dim: odd dims reversed first, then even."""
    return list(range(rank - 1, -1, -2)) + list(range(rank - 2, -1, -2))


@_stress("high_rank_elementwise", surfaces=("aten::mul.Tensor", "aten::bmm"))
def high_rank_elementwise(device: str, dtype: str | None) -> dict[str, Any]:
    """Rank 8-20 tensors through unary and binary ops, broadcasting, two different
    layouts of the same shape in one op, in-place writes through a permuted view, and
    matmul over broadcast batch dims."""
    out: dict[str, Any] = {}
    for rank in RANKS:
        shape = _shape(rank)
        x = _ints(shape, device)
        p = x.permute(_perm(rank))
        odd = _ints(tuple(1 if d % 2 else n for d, n in enumerate(shape)), device)
        batch = shape[: rank - 2]  # a and b broadcast to it from alternate dims
        a = _ints((*(n if d % 2 else 1 for d, n in enumerate(batch)), 3, 4), device)
        b = _ints((*(1 if d % 2 else n for d, n in enumerate(batch)), 4, 5), device)
        observed = {
            "affine": x * -2 + 1,
            "broadcast_add": x + odd,
            "sin_permuted": p.sin(),
            "mixed_layouts": p * p.contiguous(),
            "where": torch.where(p > 3, p, -p),
            "int_add": p.to(torch.int32) + p.contiguous().to(torch.int32),
            "matmul_broadcast_batch": a @ b,
        }
        p.mul_(2).sub_(1)  # written through the permuted view into x
        observed["written_through_permute"] = x
        out[f"rank_{rank}"] = observed
    return out


@_stress("high_rank_permute_contiguous", surfaces=("aten::clone", "aten::permute"))
def high_rank_permute_contiguous(device: str, dtype: str | None) -> dict[str, Any]:
    """permute, transpose, movedim and unsqueeze of rank 8-20 tensors report CPU's
    strides and alias their base; contiguous, clone and reshape copy them with CPU's
    strides and values."""
    out: dict[str, Any] = {}
    for rank in RANKS:
        x = _ints(_shape(rank), device, mod=1000).to(torch.int64)
        p = x.permute(_perm(rank))
        far = x.transpose(0, rank - 1)
        moved = x.movedim((0, 1), (-1, -2))
        deeper = p.unsqueeze(3).unsqueeze(0)  # rank + 2, still a view
        contiguous = p.contiguous()
        clone = p.clone()  # preserve_format: a dense permuted layout keeps strides
        out[f"rank_{rank}"] = {
            "strides": [list(t.stride()) for t in (p, far, moved, deeper)],
            "is_contiguous": [t.is_contiguous() for t in (p, far, contiguous)],
            "views_alias": len({storage_id(t) for t in (x, p, far, moved, deeper)}),
            "copies_own_storage": storage_id(contiguous) != storage_id(x)
            and storage_id(clone) != storage_id(x),
            "contiguous": contiguous,
            "contiguous_strides": list(contiguous.stride()),
            "clone_strides": list(clone.stride()),
            "reshape_flat": p.reshape(-1),
            "flatten_middle": far.flatten(2, 5).contiguous(),
            "round_trip": torch.equal(p.permute(_inverse(_perm(rank))), x),
            "deeper": deeper.contiguous(),
        }
    return out


def _inverse(perm: list[int]) -> list[int]:
    inverse = [0] * len(perm)
    for position, dim in enumerate(perm):
        inverse[dim] = position
    return inverse


@_stress("high_rank_reductions", surfaces=("aten::sum.IntList_out", "aten::amax"))
def high_rank_reductions(device: str, dtype: str | None) -> dict[str, Any]:
    """Reductions of rank 8-20 tensors over scattered dims, all dims, dims of a
    permuted view, keepdim, argmax along a middle dim and cumsum along a deep one."""
    out: dict[str, Any] = {}
    for rank in RANKS:
        x = _ints(_shape(rank), device)
        p = x.permute(_perm(rank))
        out[f"rank_{rank}"] = {
            "sum_odd_dims": x.sum(tuple(range(1, rank, 2))),
            "sum_all": x.sum(),
            "amax_ends": x.amax((0, -1)),
            "amin_keepdim": x.amin((1, 2, 3), keepdim=True),
            "mean_all_but_first": x.mean(tuple(range(1, rank)), keepdim=True),
            "argmax_middle": x.argmax(rank // 2),
            "cumsum_deep": x.cumsum(rank - 3),
            "permuted_sum": p.sum((0, 2)),
            "permuted_amax": p.amax(tuple(range(0, rank, 3))),
            "prod_two_dims": (x.remainder(2) + 1).prod(1),
            "logsumexp": x.logsumexp((0, rank - 1)),
        }
    return out


@_stress("overlapping_strides_reads", surfaces=("aten::as_strided", "aten::unfold"))
def overlapping_strides_reads(device: str, dtype: str | None) -> dict[str, Any]:
    """Read-only ops on views whose elements share memory (as_strided windows that
    overlap, a stride-0 row, unfold) see every element as CPU does, write a dense
    result, and leave the base unchanged."""
    base = torch.arange(20, dtype=torch.float32).to(device)
    windows = base.as_strided((5, 4), (3, 1), 1)  # row i starts 3 after row i-1
    repeated = base.as_strided((3, 4), (0, 2), 2)  # every row the same
    unfolded = base.unfold(0, 6, 2)  # windows of 6, every 2
    grid = base.view(4, 5).unfold(1, 3, 1)  # 2-D sliding windows
    views = (windows, repeated, unfolded, grid)
    return {
        "strides": [list(v.stride()) for v in views],
        "offsets": [v.storage_offset() for v in views],
        "alias_base": all(storage_id(v) == storage_id(base) for v in views),
        "contiguous": windows.contiguous(),
        "clone": windows.clone(),
        "clone_strides": list(windows.clone().stride()),
        "sum_dim0": windows.sum(0),
        "sum_dim1": windows.sum(1),
        "amax_dim1": windows.amax(1),
        "exp": (windows / 10).exp(),
        "add_transposed": windows[:4] + windows[:4].t(),
        "matmul_self": windows @ windows.t(),
        "cumsum": windows.cumsum(1),
        "index_select": windows.index_select(0, torch.tensor([4, 0, 2]).to(device)),
        "repeated_sum": repeated.sum(0),
        "repeated_contiguous": repeated.contiguous(),
        "unfold_sum": unfolded.sum(1),
        "unfold_mean": unfolded.mean(1),
        "grid_amax": grid.amax(-1),
        "grid_contiguous": grid.contiguous(),
        "base_unchanged": base,
    }


@_stress("expanded_strides", surfaces=("aten::expand", "aten::add_.Tensor"))
def expanded_strides(device: str, dtype: str | None) -> dict[str, Any]:
    """expand gives stride 0; clone, contiguous and reductions of expanded tensors
    (one of 2**22 virtual elements over one stored) match CPU; in-place ops and out=
    into an expanded tensor raise as on CPU and leave its base unchanged, while fill_
    and zero_ (one value everywhere) succeed as on CPU."""
    row = torch.arange(4, dtype=torch.float32).to(device)
    col = torch.arange(3, dtype=torch.float32).to(device)
    r = row.view(1, 4).expand(3, 4)
    c = col.view(3, 1).expand(3, 4)
    huge = torch.tensor([0.5]).to(device).expand(2**22)
    transposed = torch.arange(6.0, device=device).view(2, 3).t().unsqueeze(0)
    expanded_t = transposed.expand(2, 3, 2)
    ones = torch.ones(3, 4, device=device)
    raising: dict[str, Callable[[], Any]] = {
        "add_": lambda: r.add_(1),
        "mul_": lambda: r.mul_(2),
        "copy_": lambda: r.copy_(ones),
        "exp_": lambda: r.exp_(),
        "clamp_": lambda: r.clamp_(0, 1),
        "add_out": lambda: torch.add(ones, 1, out=r),
    }
    errors = {name: outcome(fn) for name, fn in raising.items()}
    base_after_errors = row.clone()
    target = torch.zeros(2, device=device)
    target.view(2, 1).expand(2, 3).fill_(7.0)
    zeroed = torch.ones(3, device=device)
    zeroed.view(1, 3).expand(4, 3).zero_()
    return {
        "strides": [list(t.stride()) for t in (r, c, huge, expanded_t)],
        "clone": r.clone(),
        "clone_strides": list(r.clone().stride()),
        "contiguous": c.contiguous(),
        "contiguous_strides": list(c.contiguous().stride()),
        "clone_writable": r.clone().add_(1),
        "sums": [r.sum(0), r.sum(1), c.sum(), (r * c).sum(1)],
        "mean_dim0": c.mean(0),
        "amax_dim0": c.amax(0),
        "product": r * c,
        "matmul": r @ c.t(),
        "cumsum": r.cumsum(0),
        "huge_sum": huge.sum(),
        "huge_amax": huge.amax(),
        "expanded_transposed": expanded_t.contiguous(),
        "expanded_transposed_sum": expanded_t.sum((0, 2)),
        "inplace_errors": errors,
        "base_after_errors": base_after_errors,
        "fill_through_expand": target,
        "zero_through_expand": zeroed,
    }


CASES = (
    zero_size_elementwise,
    zero_size_reductions,
    zero_size_matmul_cat,
    high_rank_elementwise,
    high_rank_permute_contiguous,
    high_rank_reductions,
    overlapping_strides_reads,
    expanded_strides,
)
