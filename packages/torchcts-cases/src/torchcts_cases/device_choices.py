"""Arguments PyTorch resolves per device type in Python, made explicit for the device
under test before the CPU computes the reference.

Some ops take an argument that means "choose for me", and PyTorch's Python code
chooses by the input's device type: ``F.linear_cross_entropy`` with
``LinearCrossEntropyOptions(acc_policy="auto", acc_dtype=None)`` accumulates float16
and bfloat16 in float32 with the "accurate" policy on the CPU, but in the input's own
dtype with the "compact" policy on any device PyTorch has no entry for (MPS, XPU, a
PrivateUse1 backend; `torch/nn/modules/linear_cross_entropy_options.py`,
``_AUTO_DEFAULTS``). A CPU reference run with the sample as built would compute
another algorithm than the device runs, and a correct device would miss by the
rounding of the other accumulation. So the reference runs with the choice PyTorch
makes for the device (``options._adjust(..., device=<device>)``); the device runs the
sample as built and makes that same choice itself. The record's note says what was
resolved. A torch without the hook leaves the sample as it is.
"""

from __future__ import annotations

from typing import Any

import torch


def _lce_options() -> Any:
    return getattr(torch.nn, "LinearCrossEntropyOptions", None)


def resolve_for(
    parts: tuple[Any, tuple[Any, ...], dict[str, Any]], device: str
) -> tuple[tuple[Any, tuple[Any, ...], dict[str, Any]], str | None]:
    """`parts` (input, args, kwargs of a CPU call) with each per-device choice made
    as PyTorch makes it for `device`, and a note naming what was resolved (None, and
    `parts` unchanged, when nothing was or `device` is the CPU)."""
    inp, args, kwargs = parts
    kind = _lce_options()
    options = kwargs.get("options")
    if (
        device.partition(":")[0] == "cpu"
        or kind is None
        or not isinstance(options, kind)
        or not isinstance(inp, torch.Tensor)
        or not args
        or not isinstance(args[0], torch.Tensor)
    ):
        return parts, None

    def choice(where: str) -> Any:
        return options._adjust(
            num_batches=inp.shape[0] if inp.dim() == 2 else 1,
            in_features=inp.shape[-1],
            num_classes=args[0].shape[0],
            dtype=inp.dtype,
            device=torch.device(where),
        )

    try:
        resolved = choice(device)
        if resolved == choice("cpu"):
            return parts, None
    except Exception:  # another torch's private API: leave the sample as built
        return parts, None
    note = (
        f"reference computed with the options PyTorch chooses for {device}, not "
        f"the CPU's: acc_policy={resolved.acc_policy!r}, "
        f"acc_dtype={resolved.acc_dtype}, batch_chunk_size="
        f"{resolved.batch_chunk_size}"
    )
    return (inp, args, dict(kwargs, options=resolved)), note


__all__ = ["resolve_for"]
