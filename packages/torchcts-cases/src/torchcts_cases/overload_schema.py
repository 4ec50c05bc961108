"""The aten overloads of the installed torch, read from their schemas: which kind of
generated case each one gets (out=, in-place, backward, an overload sibling), which
functional overload it is checked through, and how a captured call of one sibling
becomes the arguments of another.

Only the dispatcher's schemas are read (``torch.ops.aten.<packet>.<overload>._schema``);
no sample is built here. `torchcts_cases.overload_index` pairs these facts with calls
captured from OpInfo samples.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torchcts_cases.overload_variants import (
    BACKWARD,
    CALL,
    INPLACE,
    OUT,
    WRITES,
    base_packet,
)

_NUMBERS = (bool, int, float, complex)
CTC_REASON = "its log_alpha output leaves the entries past each target uninitialised"
TIE_REASON = "returns tie-breaking indices a backend may legally choose otherwise"
# reasons a reviewed recipe's inputs lift (`overload_recipes`: targets at full
# length write every entry; distinct values leave no tie to break)
RECIPE_LIFTS = frozenset([CTC_REASON, TIE_REASON])
# (glob on the overload without "aten::", reason): what no generated case judges
NOT_GENERATED: tuple[tuple[str, str], ...] = (
    ("*empty*", "uninitialised values: only metadata is defined (factories suite)"),
    ("resize*", "resizing leaves new elements uninitialised"),
    ("set_*", "re-points storage: the views and mutation suites judge aliasing"),
    ("*_copy_from*", "a device-transfer hook, not an op of one device"),
    ("record_stream*", "a stream hook, not an op with values"),
    # random ops that draw from the default generator without a Generator argument
    ("rand*", "random: its values come from the device's generator (rng suite)"),
    ("native_dropout", "random: its mask comes from the device's generator"),
    ("*_window*", "a window factory: the window case family judges these"),
    ("_ctc_loss", CTC_REASON),
    ("_ctc_loss.*", CTC_REASON),
    ("_make_dep_token", "an effect token for compiled graphs: uninitialised values"),
    (
        "_fused_sdp_choice",
        "which fused attention kernel a backend picks: an enum of each backend's own",
    ),
    (
        "_convert_indices_from_*",
        "a sparse layout's index conversion: schema-built indices overrun its buffers",
    ),
    (
        "*nnpack*",
        "NNPACK's private kernel: it fails to initialise on CPUs NNPACK does not know",
    ),
    ("*mkldnn*", "oneDNN's opaque tensors are outside the dense-tensor contract"),
    ("_fused_moving_avg*", "a quantization-aware training helper (quantized)"),
    ("*quantize*", "quantized tensors are outside the dense-tensor contract"),
    ("q_*", "quantized tensors are outside the dense-tensor contract"),
    ("*sparse*", "sparse layouts are outside the dense-tensor contract"),
    ("*_nested*", "nested tensors are outside the dense-tensor contract"),
)
# tie-breaking ops whose returned indices may legally differ from the CPU's
# (OpInfo judges them as legal outputs: `opinfo_source.TIE_OPS`)
TIE_PACKETS = frozenset(
    [
        *("sort", "argsort", "topk", "kthvalue", "mode", "median", "nanmedian"),
        *("msort", "max", "min", "cummax", "cummin", "_cummax_helper"),
        *("_cummin_helper", "unique_dim", "_unique", "_unique2", "unique_consecutive"),
    ]
)


@dataclass(frozen=True)
class Overload:
    """One aten overload and what its schema says about it."""

    name: str  # "add.out", "sin" (the default overload has no suffix)
    packet: str
    overload: str  # "out", "default"
    kind: str | None  # one of KINDS, None: no generated case fits its schema
    base: str  # the functional packet: "add" for add_, __and__ for __iand__

    @property
    def qualified(self) -> str:
        """The name PyTorch's errors and the dispatcher use: ``aten::add.out``."""
        return f"aten::{self.name}"


def op_overload(name: str) -> Any:
    """``torch.ops.aten.<packet>.<overload>`` of ``"add.out"`` / ``"sin"``."""
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def schema(name: str) -> Any:
    """The FunctionSchema of an overload name."""
    return op_overload(name)._schema


def all_overloads() -> Iterator[Overload]:
    """Every aten overload registered in this torch, sorted, with its kind."""
    names = sorted(
        n.removeprefix("aten::")
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("aten::")
    )
    for name in names:
        packet, _, overload = name.partition(".")
        yield Overload(
            name, packet, overload or "default", _kind(name), base_packet(packet)
        )


def _kind(name: str) -> str | None:
    s = schema(name)
    packet = name.partition(".")[0]
    written = [a for a in s.arguments if a.alias_info and a.alias_info.is_write]
    if any(a.is_out for a in s.arguments) and all(a.is_out for a in written):
        return OUT
    if written:
        inplace = base_packet(packet) != packet and written[0].name == "self"
        return INPLACE if inplace and len(written) == 1 else WRITES
    if "_backward" in packet:
        return BACKWARD
    return CALL


def not_generated(ovl: Overload) -> str | None:
    """Why no case is generated for an overload whatever samples exist, or None."""
    for glob, reason in NOT_GENERATED:
        if fnmatch.fnmatchcase(ovl.name, glob):
            return reason
    if torch._C._dispatch_has_kernel_for_dispatch_key(
        ovl.qualified, "CompositeImplicitAutograd"
    ):
        return "CompositeImplicitAutograd: it decomposes before reaching a backend"
    s = schema(ovl.name)
    types = [str(a.type) for a in s.arguments] + [str(r.type) for r in s.returns]
    if not any("Tensor" in t for t in types):
        return "takes and returns no tensor (a TorchScript primitive)"
    if any("Generator" in t for t in types):
        return "random: its values come from the device's generator (rng suite)"
    if ovl.packet.rstrip("_") in TIE_PACKETS and any(
        r.name == "indices" for r in s.returns
    ):
        return TIE_REASON
    return None


# out= overloads whose functional form lives in another packet (reviewed: the same
# arguments, and the functional's results are the outs; a functional argument the
# out= overload lacks is passed by keyword, and the out= call leaves it out)
FUNCTIONAL_ELSEWHERE = {
    "adaptive_avg_pool3d_backward.grad_input": "_adaptive_avg_pool3d_backward",
    "_slow_conv2d_backward.grad_input": "_slow_conv2d_backward.output_mask",
}


def functional_sibling(ovl: Overload) -> str | None:
    """The functional overload an out= or in-place overload computes, by its
    arguments: the overload of the base packet taking the same non-out arguments
    (``add.out`` -> ``add.Tensor``, ``add_.Scalar`` -> ``add.Scalar``). The overload
    itself for backward and call overloads; None when there is none. An overload
    writing several arguments (`WRITES`) prefers a functional sibling
    (``_fused_adam_`` -> ``_fused_adam``), else one that writes the same arguments
    without out= (``_batch_norm_with_update.out`` -> ``_batch_norm_with_update``,
    whose results are its outs), else itself when it has no out=."""
    if ovl.kind in (BACKWARD, CALL):
        return ovl.name
    if ovl.name in FUNCTIONAL_ELSEWHERE:
        return FUNCTIONAL_ELSEWHERE[ovl.name]
    target = _signature(schema(ovl.name), _FACTORY_OPTIONS)
    packet = getattr(torch.ops.aten, ovl.base, None)
    if packet is None:
        return None
    same_name = ovl.overload if ovl.kind == INPLACE else None
    found: list[str] = []
    for overload in packet.overloads():
        name = ovl.base if overload == "default" else f"{ovl.base}.{overload}"
        kind = _kind(name)
        if kind not in (CALL, BACKWARD) and not (
            ovl.kind == WRITES and kind == WRITES and not out_arguments(name)
        ):
            continue
        if _signature(schema(name), _FACTORY_OPTIONS) == target:
            found.append(name)
    found.sort(
        key=lambda n: (
            _kind(n) != CALL,
            (n.partition(".")[2] or "default") != same_name,
        )
    )
    if found:
        return found[0]
    return ovl.name if ovl.kind == WRITES and not out_arguments(ovl.name) else None


# a factory's functional overload takes these where its out= overload takes none
_FACTORY_OPTIONS = frozenset(["dtype", "layout", "device", "pin_memory"])


def _signature(
    s: Any, optional: frozenset[str] = frozenset()
) -> tuple[tuple[str, str], ...]:
    """(name, type) of the non-out arguments (alias annotations are not types),
    without the defaulted ones named in `optional`."""
    return tuple(
        (a.name, str(a.type))
        for a in s.arguments
        if not a.is_out and not (a.name in optional and a.has_default_value())
    )


def out_arguments(name: str) -> list[str]:
    """The names of an overload's out= arguments, in schema order."""
    return [a.name for a in schema(name).arguments if a.is_out]


def adapt_call(
    donor: str, args: tuple[Any, ...], kwargs: dict[str, Any], target: str
) -> tuple[tuple[Any, ...], dict[str, Any]] | str:
    """A captured call of `donor` as a call of `target` (its non-out arguments), or
    why it cannot be: values go over by argument name, a number becomes a 0-dim
    tensor where `target` takes a Tensor, a tensor's first element a number where
    it takes a Scalar, and what `donor` lacks takes `target`'s default."""
    given: dict[str, Any] = {}
    for position, argument in enumerate(schema(donor).arguments):
        if position < len(args):
            given[argument.name] = args[position]
        elif argument.name in kwargs:
            given[argument.name] = kwargs[argument.name]
    out_args: list[Any] = []
    out_kwargs: dict[str, Any] = {}
    by_name = False  # once an argument is left to its default, name the rest
    for argument in schema(target).arguments:
        if argument.is_out:
            continue
        if argument.name not in given:
            if argument.has_default_value():
                by_name = True
                continue
            return f"{donor} supplies no {argument.name!r} for {target}"
        value = _convert(given[argument.name], str(argument.type))
        if value is _UNCONVERTIBLE:
            return f"{donor}'s {argument.name!r} does not convert to {argument.type}"
        if by_name or argument.kwarg_only:
            out_kwargs[argument.name] = value
            by_name = True
        else:
            out_args.append(value)
    return tuple(out_args), out_kwargs


_UNCONVERTIBLE: Any = object()


def _convert(value: Any, type_text: str) -> Any:
    if type_text in ("Tensor", "Optional[Tensor]") and type(value) in _NUMBERS:
        return torch.tensor(value)
    if type_text in ("number", "Optional[number]") and isinstance(value, torch.Tensor):
        if value.numel() == 0:
            return _UNCONVERTIBLE
        return value.reshape(-1)[0].item()
    return value
