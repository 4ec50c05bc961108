"""The fused LSTM and GRU cells that PyTorch's RNN modules call on a non-CPU device.

``nn.LSTM`` and ``nn.GRU`` on CPU compute each step from linear ops, but on CUDA, XPU
and PrivateUse1 tensors they call ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``
and their backward kernels, which the CPU does not have. A backend must supply them;
simdev does so here over CPU payloads, with the same gate equations (LSTM gates i, f,
g, o; GRU gates r, z, n) and a workspace of its own layout read only by its own
backward kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

_Tensor = torch.Tensor


def _gates(
    input_gates: _Tensor,
    hidden_gates: _Tensor,
    input_bias: _Tensor | None,
    hidden_bias: _Tensor | None,
) -> tuple[_Tensor, _Tensor]:
    if input_bias is not None:
        input_gates = input_gates + input_bias
    if hidden_bias is not None:
        hidden_gates = hidden_gates + hidden_bias
    return input_gates, hidden_gates


def lstm_cell(
    input_gates: _Tensor,
    hidden_gates: _Tensor,
    cx: _Tensor,
    input_bias: _Tensor | None = None,
    hidden_bias: _Tensor | None = None,
) -> tuple[_Tensor, _Tensor, _Tensor]:
    """(hy, cy, workspace): the workspace holds the activated gates i, f, g, o."""
    ig, hg = _gates(input_gates, hidden_gates, input_bias, hidden_bias)
    i, f, g, o = (ig + hg).chunk(4, dim=1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat((i, f, g, o), dim=1)


def lstm_cell_backward(
    grad_hy: _Tensor | None,
    grad_cy: _Tensor | None,
    cx: _Tensor,
    cy: _Tensor,
    workspace: _Tensor,
    has_bias: bool,
) -> tuple[_Tensor, _Tensor, _Tensor | None]:
    """(grad of the gates before activation, grad of cx, grad of the bias)."""
    i, f, g, o = workspace.chunk(4, dim=1)
    tanh_cy = cy.tanh()
    hy_grad = grad_hy if grad_hy is not None else torch.zeros_like(cy)
    gcy = hy_grad * o * (1 - tanh_cy * tanh_cy)
    if grad_cy is not None:
        gcy = gcy + grad_cy
    grad_gates = torch.cat(
        (
            gcy * g * i * (1 - i),
            gcy * cx * f * (1 - f),
            gcy * i * (1 - g * g),
            hy_grad * tanh_cy * o * (1 - o),
        ),
        dim=1,
    )
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, gcy * f, grad_bias


def gru_cell(
    input_gates: _Tensor,
    hidden_gates: _Tensor,
    hx: _Tensor,
    input_bias: _Tensor | None = None,
    hidden_bias: _Tensor | None = None,
) -> tuple[_Tensor, _Tensor]:
    """(hy, workspace): the workspace holds r, z, n, hx and the hidden n-gate."""
    ig, hg = _gates(input_gates, hidden_gates, input_bias, hidden_bias)
    i_r, i_z, i_n = ig.chunk(3, dim=1)
    h_r, h_z, h_n = hg.chunk(3, dim=1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    hy = (1 - z) * n + z * hx
    return hy, torch.cat((r, z, n, hx, h_n), dim=1)


def gru_cell_backward(
    grad_hy: _Tensor, workspace: _Tensor, has_bias: bool
) -> tuple[_Tensor, _Tensor, _Tensor, _Tensor | None, _Tensor | None]:
    """Grads of the input gates, hidden gates, hx, and both biases."""
    r, z, n, hx, h_n = workspace.chunk(5, dim=1)
    g_n = grad_hy * (1 - z) * (1 - n * n)
    g_r = g_n * h_n * r * (1 - r)
    g_z = grad_hy * (hx - n) * z * (1 - z)
    grad_input = torch.cat((g_r, g_z, g_n), dim=1)
    grad_hidden = torch.cat((g_r, g_z, g_n * r), dim=1)
    if not has_bias:
        return grad_input, grad_hidden, grad_hy * z, None, None
    return grad_input, grad_hidden, grad_hy * z, grad_input.sum(0), grad_hidden.sum(0)


RNN_CELL_IMPLS: dict[str, Callable[..., Any]] = {
    "aten::_thnn_fused_lstm_cell": lstm_cell,
    "aten::_thnn_fused_lstm_cell_backward_impl": lstm_cell_backward,
    "aten::_thnn_fused_gru_cell": gru_cell,
    "aten::_thnn_fused_gru_cell_backward": gru_cell_backward,
}
