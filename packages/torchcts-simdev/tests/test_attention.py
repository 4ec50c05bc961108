"""simdev's fused-attention hooks against PyTorch's own attention on the CPU."""

from __future__ import annotations

import pytest
import torch
import torchcts_simdev  # noqa: F401  (registers the device)
from torch.nn.functional import scaled_dot_product_attention

FUSED = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
BACKWARD = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward


@pytest.mark.parametrize("mask", ["none", "causal", "bool", "additive"])
def test_the_hooks_agree_with_sdpa_and_its_gradients(mask: str) -> None:
    """Output and query/key/value gradients equal CPU SDPA's (math path) for no
    mask, a causal one, a boolean and an additive mask; log-sum-exp is that of the
    scaled, masked scores."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.rand(1, 2, 4, 8, generator=g) - 0.5 for _ in range(3))
    grad = torch.rand(1, 2, 4, 8, generator=g)
    bias: torch.Tensor | None = None
    if mask == "bool":
        bias = torch.rand(4, 4, generator=g) > 0.3
        bias[:, 0] = True  # every query sees a key
    elif mask == "additive":
        bias = torch.rand(4, 4, generator=g)
    causal = mask == "causal"
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    expected = scaled_dot_product_attention(*leaves, attn_mask=bias, is_causal=causal)
    expected_grads = torch.autograd.grad(expected, leaves, grad)
    dev = [t.to("simdev") for t in (q, k, v)]
    dev_bias = None if bias is None else bias.to("simdev")
    out, lse, cq, ck, mq, mk, seed, offset, _ = FUSED(*dev, dev_bias, 0.0, causal)
    torch.testing.assert_close(out.cpu(), expected.detach())
    scores = q @ k.transpose(-2, -1) / 8**0.5
    if causal:
        scores = scores.masked_fill(
            ~torch.ones(4, 4, dtype=torch.bool).tril(), -torch.inf
        )
    if bias is not None:
        scores = (
            scores.masked_fill(~bias, -torch.inf) if mask == "bool" else scores + bias
        )
    torch.testing.assert_close(lse.cpu(), torch.logsumexp(scores, -1))
    passed_bias = dev_bias if dev_bias is not None else torch.empty(0, device="simdev")
    grads = BACKWARD(
        grad.to("simdev"), *dev, passed_bias, [True, True, True, False], out, lse,
        cq, ck, mq, mk, 0.0, causal, seed, offset,
    )  # fmt: skip
    for got, want in zip(grads[:3], expected_grads, strict=True):
        torch.testing.assert_close(got.cpu(), want)
