"""The fused-attention hooks of a PrivateUse1 backend, computed the plain way.

``_scaled_dot_product_fused_attention_overrideable`` and its backward are where
PyTorch hands scaled dot-product attention to an out-of-tree backend that picks its
own fused kernel; their generic kernels only raise. simdev computes them from the
definition on CPU payloads (scores, softmax, a weighted sum; autograd for the
gradients), without dropout, and returns what the schema asks for: the output, the
log-sum-exp of each query's scores, and empty placeholders where a flash kernel
keeps its own bookkeeping (sequence offsets, random state, debug mask).
"""

from __future__ import annotations

from typing import Any

import torch

_Tensor = torch.Tensor


def _scores(
    query: _Tensor,
    key: _Tensor,
    attn_bias: _Tensor | None,
    is_causal: bool,
    scale: float | None,
) -> _Tensor:
    factor = scale if scale is not None else query.size(-1) ** -0.5
    scores = query @ key.transpose(-2, -1) * factor
    if is_causal:
        keep = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_bias is not None:
        if attn_bias.dtype == torch.bool:
            scores = scores.masked_fill(~attn_bias, float("-inf"))
        else:
            scores = scores + attn_bias
    return scores


def _no_dropout(dropout_p: float) -> None:
    if dropout_p:
        raise NotImplementedError(
            "simdev's fused attention hook does not implement dropout (dropout_p > 0)"
        )


def fused_attention(
    query: _Tensor,
    key: _Tensor,
    value: _Tensor,
    attn_bias: _Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,
    *,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """Output, log-sum-exp (batch, heads, queries; float32) and placeholders."""
    _no_dropout(dropout_p)
    scores = _scores(query, key, attn_bias, is_causal, scale)
    output = torch.softmax(scores, -1) @ value
    logsumexp = torch.logsumexp(scores, -1).to(torch.float32)
    nothing = torch.empty(0, dtype=torch.int64)
    debug = torch.empty(0, dtype=query.dtype)
    sizes = (query.size(-2), key.size(-2))
    return (output, logsumexp, nothing, nothing, *sizes, nothing, nothing, debug)


def fused_attention_backward(
    grad_out: _Tensor,
    query: _Tensor,
    key: _Tensor,
    value: _Tensor,
    attn_bias: _Tensor,
    grad_input_mask: list[bool],
    out: _Tensor,
    logsumexp: _Tensor,
    cum_seq_q: _Tensor,
    cum_seq_k: _Tensor,
    max_q: int,
    max_k: int,
    dropout_p: float,
    is_causal: bool,
    philox_seed: _Tensor,
    philox_offset: _Tensor,
    *,
    scale: float | None = None,
) -> tuple[_Tensor, ...]:
    """The gradients of query, key, value and the bias (empty where not asked),
    from the chain rule through the softmax (autograd does not run inside a
    backend's kernel)."""
    _no_dropout(dropout_p)
    factor = scale if scale is not None else query.size(-1) ** -0.5
    bias = attn_bias if attn_bias.numel() else None
    probs = torch.softmax(_scores(query, key, bias, is_causal, scale), -1)
    grad_probs = grad_out @ value.transpose(-2, -1)
    grad_scores = probs * (grad_probs - (grad_probs * probs).sum(-1, keepdim=True))
    grads = [
        grad_scores @ key * factor,
        grad_scores.transpose(-2, -1) @ query * factor,
        probs.transpose(-2, -1) @ grad_out,
        grad_scores.sum_to_size(attn_bias.shape) if bias is not None else None,
    ]
    empty = torch.empty(0, dtype=query.dtype)
    return tuple(
        g if asked and g is not None else empty
        for g, asked in zip(grads, grad_input_mask, strict=True)
    )
