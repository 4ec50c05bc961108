"""Reviewed recipes (see `overload_recipes`) for the layer kernels:
convolutions' private kernels, sampling grids, losses, padding and upsampling
gradients, reductions into another dtype, attention's fused CPU paths,
low-precision matmuls, and results made unique by their inputs (ties, ctc)."""

from __future__ import annotations

import torch

from torchcts_cases.overload_capture import Call
from torchcts_cases.overload_recipe_kit import Draw, recipe


# -- convolutions' private kernels: input (1, 2, 5, 5), 3 filters of 2x3x3 ---------------
@recipe("_convolution")
def _convolution(d: Draw) -> Call:
    geometry = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    # benchmark, deterministic, cudnn_enabled, allow_tf32: hints a CPU ignores
    flags = (False, False, False, False)
    return (d.pos(1, 2, 5, 5), d.signed(3, 2, 3, 3), d.pos(3), *geometry, *flags), {}


recipe("_slow_conv2d_forward")(
    lambda d: (
        (d.pos(1, 2, 5, 5), d.signed(3, 2, 3, 3), [3, 3], d.pos(3), [1, 1], [0, 0]),
        {},
    )
)
recipe("_slow_conv2d_backward.output_mask")(
    lambda d: (
        (d.signed(1, 3, 3, 3), d.pos(1, 2, 5, 5), d.signed(3, 2, 3, 3), [3, 3]),
        {"stride": [1, 1], "padding": [0, 0], "output_mask": [True, True, True]},
    )
)
recipe("slow_conv3d_forward")(
    lambda d: (
        (d.pos(1, 2, 4, 4, 4), d.signed(3, 2, 2, 2, 2), [2, 2, 2], d.pos(3)),
        {"stride": [1, 1, 1], "padding": [0, 0, 0]},
    )
)
recipe("slow_conv_dilated2d")(
    lambda d: (
        (d.pos(1, 2, 5, 5), d.signed(3, 2, 2, 2), [2, 2], d.pos(3)),
        {"stride": [1, 1], "padding": [1, 1], "dilation": [2, 2]},
    )
)
recipe("slow_conv_dilated3d")(
    lambda d: (
        (d.pos(1, 2, 5, 5, 5), d.signed(3, 2, 2, 2, 2), [2, 2, 2], d.pos(3)),
        {"stride": [1, 1, 1], "padding": [0, 0, 0], "dilation": [2, 2, 2]},
    )
)
# a transposed convolution's weight is (in, out, ...): 2 channels in, 3 out
recipe("slow_conv_transpose2d")(
    lambda d: (
        (d.pos(1, 2, 4, 4), d.signed(2, 3, 3, 3), [3, 3], d.pos(3)),
        {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1]},
    )
)
recipe("slow_conv_transpose3d")(
    lambda d: (
        (d.pos(1, 2, 3, 3, 3), d.signed(2, 3, 2, 2, 2), [2, 2, 2], d.pos(3)),
        {"stride": [1, 1, 1], "padding": [0, 0, 0]},
    )
)
# time x batch x channels, a kernel of width 3 into 4 channels, padding 1
recipe("conv_tbc")(lambda d: ((d.pos(5, 2, 3), d.signed(3, 3, 4), d.pos(4), 1), {}))


# -- sampling grids ------------------------------------------------------------------------
recipe("affine_grid_generator")(
    lambda d: ((d.signed(2, 2, 3), [2, 3, 4, 5], False), {})
)
# grid coordinates in [-1, 1): bilinear, zero padding, corners not aligned
recipe("_grid_sampler_2d_cpu_fallback")(
    lambda d: ((d.pos(1, 2, 4, 4), d.signed(1, 3, 3, 2), 0, 0, False), {})
)
recipe("_grid_sampler_2d_cpu_fallback_backward")(
    lambda d: (
        (d.signed(1, 2, 3, 3), d.pos(1, 2, 4, 4), d.signed(1, 3, 3, 2), 0, 0, False),
        {},
    )
)


# -- losses, padding and upsampling gradients -----------------------------------------------
@recipe("nll_loss2d_forward")
def _nll2d(d: Draw) -> Call:
    # log-probabilities over 3 classes of a 4x4 map; targets are class indices
    scores = d.signed(2, 3, 4, 4).log_softmax(1)
    target = d.ints(0, 3, 2, 4, 4, dtype=torch.int64)
    return (scores, target, None, 1, -100), {}


@recipe("nll_loss2d_backward")
def _nll2d_backward(d: Draw) -> Call:
    (scores, target, weight, reduction, ignore), _ = _nll2d(d)
    total = torch.tensor(float(target.numel()))  # the mean's divisor, no weights
    return (torch.tensor(1.0), scores, target, weight, reduction, ignore, total), {}


# the gradient of a padded output: 4x4(x4) images padded by 1 on every side
recipe("reflection_pad2d_backward")(
    lambda d: ((d.signed(1, 2, 6, 6), d.pos(1, 2, 4, 4), [1, 1, 1, 1]), {})
)
recipe("reflection_pad3d_backward")(
    lambda d: ((d.signed(1, 2, 6, 6, 6), d.pos(1, 2, 4, 4, 4), [1] * 6), {})
)
recipe("replication_pad3d_backward")(
    lambda d: ((d.signed(1, 2, 6, 6, 6), d.pos(1, 2, 4, 4, 4), [1] * 6), {})
)
# scale factors, not an output size (exactly one of the two is given)
recipe("upsample_bilinear2d.vec")(
    lambda d: ((d.pos(1, 2, 4, 4), None, False, [2.0, 1.5]), {})
)
recipe("upsample_nearest2d.vec")(lambda d: ((d.pos(1, 2, 4, 4), None, [2.0, 1.5]), {}))


# -- reductions into another dtype ---------------------------------------------------------
recipe("norm.ScalarOpt_dim_dtype")(
    lambda d: ((d.signed(2, 3), 3, [1], False), {"dtype": torch.float64})
)
recipe("norm.ScalarOpt_dtype")(
    lambda d: ((d.signed(2, 3), 3), {"dtype": torch.float64})
)
recipe("_is_all_true", "bool")(lambda d: ((torch.tensor([True, True, True]),), {}))
recipe("_histogramdd_from_bin_tensors")(
    lambda d: (
        (d.pos(6, 2), [torch.linspace(0.5, 1.5, 4), torch.linspace(0.5, 1.5, 3)]),
        {},
    )
)


@recipe("_embedding_bag_dense_backward")
def _embedding_bag_backward(d: Draw) -> Call:
    # bag bookkeeping from the forward kernel itself (mode 1, mean, computes it)
    weight, indices = d.pos(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 4])
    _, offset2bag, bag_size, maximum = torch.ops.aten._embedding_bag(
        weight, indices, offsets, False, 1
    )
    grad = d.signed(2, 3)
    return (grad, indices, offset2bag, bag_size, maximum, 10, False, 1, None), {}


# -- attention's and transformers' fused CPU paths --------------------------------------------
def _attention_weights(d: Draw, embed: int) -> tuple[torch.Tensor, ...]:
    """qkv projection (3E, E) and bias, output projection (E, E) and bias."""
    scale = embed**-0.5
    return (
        d.signed(3 * embed, embed) * scale,
        d.signed(3 * embed),
        d.signed(embed, embed) * scale,
        d.signed(embed),
    )


@recipe("_native_multi_head_attention")
def _mha(d: Draw) -> Call:
    q, k, v = (d.signed(2, 3, 4) for _ in range(3))
    return (q, k, v, 4, 2, *_attention_weights(d, 4)), {}


@recipe("_transform_bias_rescale_qkv")
def _qkv(d: Draw) -> Call:
    return (d.signed(2, 3, 12), d.signed(12), 2), {}


@recipe("_transformer_encoder_layer_fwd")
def _encoder_layer(d: Draw) -> Call:
    embed, hidden = 4, 8
    src = d.signed(2, 3, embed)
    norms = (d.pos(embed), d.signed(embed), d.pos(embed), d.signed(embed))
    ffn = (d.signed(hidden, embed), d.signed(hidden), d.signed(embed, hidden))
    args = (src, embed, 2, *_attention_weights(d, embed), False, False, 1e-5)
    return (*args, *norms, *ffn, d.signed(embed)), {}


# -- low-precision matmuls with a CPU kernel -----------------------------------------------------
@recipe("_int_mm", "int8")
def _int_mm(d: Draw) -> Call:
    # int8 x int8 accumulated into int32
    a = d.ints(-8, 8, 17, 8, dtype=torch.int8)
    return (a, d.ints(-8, 8, 8, 8, dtype=torch.int8)), {}


@recipe("_scaled_mm", "float8_e4m3fn")
def _scaled_mm(d: Draw) -> Call:
    # float8 operands (the second column-major) with per-tensor float32 scales
    a = d.signed(16, 32).to(torch.float8_e4m3fn)
    b = d.signed(16, 32).to(torch.float8_e4m3fn).t()
    scales = (torch.tensor(0.5), torch.tensor(2.0))
    return (a, b, *scales), {"out_dtype": torch.float32}


@recipe("_scaled_mm_v2", "float8_e4m3fn")
def _scaled_mm_v2(d: Draw) -> Call:
    # one tensor-wise scale per operand (recipe 0, no swizzle), as _scaled_mm's
    a = d.signed(16, 32).to(torch.float8_e4m3fn)
    b = d.signed(16, 32).to(torch.float8_e4m3fn).t()
    scale_a, scale_b = [torch.tensor(0.5)], [torch.tensor(2.0)]
    return (a, b, scale_a, [0], [0], scale_b, [0], [0], None, torch.float32), {}


@recipe("_grouped_mm", "bfloat16")
def _grouped_mm(d: Draw) -> Call:
    # two groups of 16 rows (offsets into the rows of the 2-d operand), each times
    # its own 16x24 matrix; rows a multiple of 16 bytes, as the kernel requires
    a = d.signed(32, 16).to(torch.bfloat16)
    b = d.signed(2, 16, 24).to(torch.bfloat16)
    return (a, b), {"offs": torch.tensor([16, 32], dtype=torch.int32)}


# -- results a backend could choose otherwise, made unique by the inputs --------------------
@recipe("median.dim")
def _median(d: Draw) -> Call:
    # distinct values: the (lower) median of each row sits at one index only
    perm = torch.randperm(12, generator=d.generator).to(torch.float32)
    return (perm.reshape(3, 4), 1), {}


@recipe("nanmedian.dim")
def _nanmedian(d: Draw) -> Call:
    # distinct values and one NaN, which nanmedian skips
    values = torch.randperm(12, generator=d.generator).to(torch.float32)
    values[5] = torch.nan
    return (values.reshape(3, 4), 1), {}


def _ctc(d: Draw) -> tuple[torch.Tensor, torch.Tensor]:
    """log-probabilities (time 6, batch 2, 4 classes) and targets of length 2.

    Every input and target at its full length: log_alpha (the forward variables,
    the second result) is then written everywhere; shorter ones leave entries past
    each length unwritten, which no backend could be judged on."""
    log_probs = d.signed(6, 2, 4).log_softmax(2)
    return log_probs, d.ints(1, 4, 2, 2, dtype=torch.int64)


# 4 steps of a batch of 2 sequences of lengths 4 and 2 (sorted, as PyTorch wants);
# the lengths stay on the CPU (`overload_checks.HOST_ARGUMENTS`)
recipe("_pack_padded_sequence")(
    lambda d: ((d.signed(4, 2, 3), torch.tensor([4, 2]), False), {})
)
recipe("_ctc_loss")(lambda d: ((*_ctc(d), [6, 6], [2, 2]), {}))
recipe("_ctc_loss.Tensor")(
    lambda d: ((*_ctc(d), torch.tensor([6, 6]), torch.tensor([2, 2])), {})
)
