"""Why an aten overload is outside the coverage audit's denominator: the rules a
reviewer reads, each with its reason (`exclusion`), and the device-path hooks whose
cases run only on a non-CPU device (`device_hook`).

Three kinds of rule, tried in order:

1. `EXCLUSIONS`: what TorchCTS's dense-tensor contract leaves out (quantized,
   sparse, nested), other backends' private kernels, compiler and autograd helpers.
2. `NO_CPU_KERNEL`: kernels this torch registers for other devices only. Each rule
   names the kernels it rests on and applies only while none of them has a CPU or
   CompositeExplicitAutograd kernel in the installed torch (checked through the
   dispatcher), so a torch that gains one turns the overloads back into unknowns.
   A CPU run cannot reach them, so no CPU reference exists to judge a device by.
3. CompositeImplicitAutograd overloads, which decompose before a backend sees them.

`DEVICE_HOOKS` are different: their cases exist (suite ``copies``), and their CPU
runs dispatch the overload, whose CPU kernel raises by design; the trace would count
them observed, but no CPU run judges them, so the audit lists them apart, naming the
case that judges them on a device.
"""

from __future__ import annotations

import fnmatch

import torch

# (glob on the overload name without "aten::", reason). First match wins.
EXCLUSIONS: tuple[tuple[str, str], ...] = (
    ("*quantize*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("q_*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("*quantized*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("fbgemm_*", "x86 FBGEMM kernels, not a device contract"),
    ("*sparse*", "sparse layouts are outside the dense-tensor contract"),
    ("*_coo*", "sparse layouts are outside the dense-tensor contract"),
    ("*csr*", "sparse layouts are outside the dense-tensor contract"),
    ("*csc*", "sparse layouts are outside the dense-tensor contract"),
    ("*bsr*", "sparse layouts are outside the dense-tensor contract"),
    ("*bsc*", "sparse layouts are outside the dense-tensor contract"),
    ("*mkldnn*", "another backend's private kernel (oneDNN)"),
    ("*miopen*", "another backend's private kernel (MIOpen)"),
    ("*cudnn*", "another backend's private kernel (cuDNN)"),
    ("_cufft*", "another backend's private kernel (cuFFT)"),
    ("*_mps*", "another backend's private kernel (MPS)"),
    ("_mps_*", "another backend's private kernel (MPS)"),
    ("*nnpack*", "another backend's private kernel (NNPACK)"),
    ("*xnnpack*", "another backend's private kernel (XNNPACK)"),
    ("*vulkan*", "another backend's private kernel (Vulkan)"),
    ("_nested*", "nested tensors are outside the dense-tensor contract"),
    ("*nested_tensor*", "nested tensors are outside the dense-tensor contract"),
    ("_test_*", "PyTorch's own test hooks"),
    ("_assert*", "graph assertions used by compilers, not a device contract"),
    ("sym_*", "symbolic-shape helpers used by compilers"),
    ("_functional_*", "functionalization helpers used by compilers"),
    ("*_jvp*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_make_dual*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_unpack_dual*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_fw_primal*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("*_cuda*", "another backend's private kernel (CUDA)"),
    ("_fbgemm*", "x86 FBGEMM kernels, not a device contract"),
    ("_thnn_fused*", "CUDA-only fused RNN cells"),
    ("_fused_moving_avg*", "quantization-aware training helper"),
    ("*fake_quant*", "quantization-aware training helper"),
    ("_foobar*", "PyTorch's own test hooks"),
    ("_has_compatible_shallow_copy_type*", "Python binding helper"),
    # a sparse tensor's accessors and kernels (a strided tensor raises on each)
    *(
        (glob, "a sparse tensor's accessor or kernel: outside the dense contract")
        for glob in (
            *("_dimI", "_dimV", "_nnz", "dense_dim", "_indices*", "_values*"),
            *("indices", "indices_copy*", "values", "values_copy*"),
            *("ccol_indices*", "col_indices*", "crow_indices*", "row_indices*"),
            *("_coalesce*", "hspmm*", "sspaddmm*", "_spsolve*", "_spdiags*"),
            "_to_dense*",
        )
    ),
    ("_cslt_*", "another backend's private kernel (cuSPARSELt)"),
    ("mps_*", "another backend's private kernel (MPS)"),
    ("_triton_*", "Triton kernels registered by CUDA builds only (no kernel here)"),
    *(
        (
            glob,
            "CUDA's fused attention kernels: this torch registers only a Meta "
            "kernel (SDPA's CPU path is _scaled_dot_product_flash_attention_for_cpu)",
        )
        for glob in (
            "_flash_attention_*",
            "_efficient_attention_*",
            "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_flash_attention_backward",
            "_scaled_dot_product_efficient_attention*",
        )
    ),
    *(
        (glob, "nested (jagged) tensors' conversions: outside the dense contract")
        for glob in ("_jagged_to_padded_dense*", "_padded_dense_to_jagged*")
    ),
    ("to_padded_tensor*", "nested tensors are outside the dense-tensor contract"),
    *(
        (
            glob,
            "weight-only quantized matmul with packed int4/int8 weights: "
            "quantization is outside the dense-tensor contract",
        )
        for glob in (
            "_convert_weight_to_int4pack*",
            "_weight_int4pack_mm*",
            "_weight_int8pack_mm*",
            "_dyn_quant_*",
        )
    ),
    ("int_repr*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("_make_dep_token", "an effect token for compiled graphs, not a device contract"),
    ("_print", "TorchScript's print primitive: takes and returns no tensor"),
)
COMPOSITE_REASON = (
    "CompositeImplicitAutograd: decomposes into other overloads before reaching a "
    "backend, which never sees it"
)


def _no_cpu(kernels: tuple[str, ...]) -> bool:
    """None of `kernels` has a CPU kernel, or a composite one that serves the CPU."""
    keys = (
        "CPU",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
    )
    return not any(
        torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{k}", key)
        for k in kernels
        for key in keys
    )


def _cpu_less(what: str, why: str = "") -> str:
    return f"no CPU kernel in this torch: {what}" + (f" ({why})" if why else "")


# (globs, the kernels they rest on, reason): applies while no kernel has a CPU route
NO_CPU_KERNEL: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        ("_conv_depthwise2d*", "conv_depthwise3d*"),
        ("_conv_depthwise2d", "conv_depthwise3d"),
        _cpu_less(
            "CUDA's depthwise convolutions",
            "a CPU depthwise convolution runs through convolution, judged by "
            "OpInfo's conv cases",
        ),
    ),
    (
        ("batch_norm_stats*", "batch_norm_elemt*", "batch_norm_gather_stats*"),
        (
            *("batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats"),
            "batch_norm_gather_stats_with_counts",
        ),
        _cpu_less("SyncBatchNorm's CUDA kernels (statistics and elementwise pass)"),
    ),
    (
        ("batch_norm_backward_reduce*", "batch_norm_backward_elemt*"),
        ("batch_norm_backward_reduce", "batch_norm_backward_elemt"),
        _cpu_less("SyncBatchNorm's CUDA backward kernels"),
    ),
    (
        ("mm.dtype*", "bmm.dtype*", "addmm.dtype*", "baddbmm.dtype*"),
        ("mm.dtype", "bmm.dtype", "addmm.dtype", "baddbmm.dtype"),
        _cpu_less(
            "matmuls into another out_dtype (half inputs, float32 result)",
            "registered for Meta only here; CUDA and XPU builds implement them",
        ),
    ),
    (
        ("_scaled_grouped_mm*",),
        ("_scaled_grouped_mm", "_scaled_grouped_mm_v2"),
        _cpu_less("CUDA's scaled grouped float8 matmuls"),
    ),
    (
        ("_mixed_dtypes_linear",),
        ("_mixed_dtypes_linear",),
        _cpu_less("CUTLASS's mixed-dtype linear (CUDA)"),
    ),
    (
        ("_philox_*",),
        ("_philox_normal_", "_philox_uniform_", "_philox_key_split"),
        _cpu_less(
            "counter-based Philox RNG kernels",
            "registered for Meta only: a CUDA build's compiled-RNG path",
        ),
    ),
    (
        ("_masked_scale*", "_fused_dropout*", "_fill_mem_eff_dropout_mask_"),
        ("_masked_scale", "_fused_dropout", "_fill_mem_eff_dropout_mask_"),
        _cpu_less("CUDA's fused dropout kernels"),
    ),
    (
        ("_fused_rms_norm_backward",),
        ("_fused_rms_norm_backward",),
        _cpu_less("the fused RMSNorm backward of CUDA and XPU"),
    ),
    (
        ("linear_backward*", "matmul_backward*"),
        ("linear_backward", "matmul_backward"),
        _cpu_less(
            "backward kernels registered for nested tensors (and MPS's "
            "linear_backward) only"
        ),
    ),
    (
        ("max_pool2d_backward*",),
        ("max_pool2d_backward",),
        _cpu_less(
            "registered by MPS builds only",
            "a CPU max pool's backward is max_pool2d_with_indices_backward",
        ),
    ),
    (
        ("native_norm*",),
        ("native_norm", "native_norm.ScalarOpt_dim_dtype"),
        _cpu_less("a sparse tensor's norm (registered for SparseCPU only)"),
    ),
    (
        ("_resize_output*",),
        ("_resize_output_",),
        _cpu_less("a compiler's out= resize helper (registered for Meta only)"),
    ),
)

OTHER_RULES: tuple[tuple[str, str], ...] = (
    (
        "detach_",
        "handled by the autograd layer alone (VariableTypeManual's detach_ never "
        "redispatches): no backend kernel ever runs",
    ),
    (
        "_fused_sdp_choice",
        "which fused attention kernel a backend picks: an enum of each backend's own, "
        "no device-independent value",
    ),
    (
        "record_stream",
        "a caching allocator's stream hook: takes a Stream and returns nothing (the "
        "streams capability judges stream ordering)",
    ),
    (
        "from_file*",
        "maps a file into host memory: a CPU-only factory (a device tensor is a copy "
        "of it)",
    ),
    (
        "_pin_memory*",
        "pins host memory for an accelerator; this CPU-only torch has none ('Cannot "
        "access accelerator device when none is available'): the pin_memory "
        "capability's DataLoader case reaches it on a device",
    ),
)

# overload -> the case judging it on a non-CPU device (suite copies)
DEVICE_HOOKS: dict[str, str] = {
    **dict.fromkeys(
        (
            *("_copy_from", "_copy_from.out", "_copy_from_and_resize"),
            "_copy_from_and_resize.out",
        ),
        "copies/copy_from_hooks",
    ),
    **dict.fromkeys(
        (
            *("convolution_overrideable", "convolution_overrideable.out"),
            "convolution_backward_overrideable",
            "convolution_backward_overrideable.out",
        ),
        "copies/convolution_hooks",
    ),
    **dict.fromkeys(
        (
            "_scaled_dot_product_fused_attention_overrideable",
            "_scaled_dot_product_fused_attention_overrideable_backward",
        ),
        "copies/fused_attention_hooks",
    ),
}


def device_hook(name: str) -> str | None:
    """Why a device-path hook is outside the denominator, naming its case; None for
    any other overload."""
    case = DEVICE_HOOKS.get(name.removeprefix("aten::"))
    if case is None:
        return None
    return (
        "a device-path hook a non-CPU backend implements: CPU's kernel raises by "
        f"design, so no CPU run judges it; judged on a device by {case}"
    )


def exclusion(name: str) -> str | None:
    """The reason an overload (``aten::add.out``) is excluded, or None."""
    bare = name.removeprefix("aten::")
    for glob, reason in EXCLUSIONS:
        if fnmatch.fnmatchcase(bare, glob):
            return reason
    for globs, kernels, reason in NO_CPU_KERNEL:
        if any(fnmatch.fnmatchcase(bare, g) for g in globs) and _no_cpu(kernels):
            return reason
    for glob, reason in OTHER_RULES:
        if fnmatch.fnmatchcase(bare, glob):
            return reason
    if torch._C._dispatch_has_kernel_for_dispatch_key(
        name, "CompositeImplicitAutograd"
    ):
        return COMPOSITE_REASON
    return None


__all__ = ["COMPOSITE_REASON", "DEVICE_HOOKS", "EXCLUSIONS", "device_hook", "exclusion"]
