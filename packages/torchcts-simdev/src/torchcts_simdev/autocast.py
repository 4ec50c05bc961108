"""Autocast for simdev: what a C++ backend registers under ``AutocastPrivateUse1``.

PyTorch ships autocast policies for its own devices only. A PrivateUse1 backend gets
none: without a fallthrough every op under ``torch.autocast("simdev")`` fails with
"Could not run ... from the 'Autocastsimdev' backend", and without
``get_amp_supported_dtype`` on the device module even ``torch.utils.checkpoint``
fails. simdev registers the fallthrough plus the CPU's lower-precision list (matmuls,
convolutions, attention), so autocast on simdev casts exactly where it does on CPU;
every other op runs in the dtypes it is given.
"""

from __future__ import annotations

from typing import Any

import torch

AMP_DTYPES = (torch.float16, torch.bfloat16)
# CPU autocast's lower_precision_fp list (aten/src/ATen/autocast_mode.cpp)
LOWER_PRECISION_OPS = (
    "conv1d",
    "conv2d",
    "conv3d",
    "bmm",
    "mm",
    "linalg_vecdot",
    "baddbmm",
    "addmm",
    "addbmm",
    "linear",
    "matmul",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "prelu",
    "scaled_dot_product_attention",
    "_native_multi_head_attention",
)
_KEY = torch._C.DispatchKey.__members__["AutocastPrivateUse1"]  # not in torch's stubs


def _cast(value: Any, dtype: torch.dtype) -> Any:
    """Floating simdev tensors (not float64) in `dtype`, as autocast casts them."""
    if isinstance(value, torch.Tensor):
        eligible = (
            value.device.type == "simdev"
            and value.is_floating_point()
            and value.dtype != torch.float64
        )
        return value.to(dtype) if eligible else value
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _lower_precision(op: Any) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("simdev")
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_KEY)):
            return op(*_cast(args, dtype), **_cast(kwargs, dtype))

    return kernel


def lower_precision_kernel() -> Any:
    """One lower-precision kernel (every one runs the same code), for registration to
    hide it from Dynamo."""
    return _lower_precision(torch.ops.aten.mm.default)


def register_autocast() -> tuple[Any, Any]:
    """Install the fallthrough and the lower-precision kernels; keep the libraries."""
    passthrough = torch.library.Library("_", "IMPL")  # type: ignore[no-untyped-call]
    passthrough.fallback(  # type: ignore[no-untyped-call]
        torch.library.fallthrough_kernel, "AutocastPrivateUse1"
    )
    kernels = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    for name in LOWER_PRECISION_OPS:
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            kernels.impl(  # type: ignore[no-untyped-call]
                f"{name}.{overload}" if overload != "default" else name,
                _lower_precision(getattr(packet, overload)),
                "AutocastPrivateUse1",
            )
    return passthrough, kernels
