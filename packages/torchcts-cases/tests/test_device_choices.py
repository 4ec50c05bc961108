"""Per-device choices PyTorch makes in Python are made for the device under test
before the CPU computes the reference: linear_cross_entropy's "auto" options."""

from __future__ import annotations

import torch
from torchcts_cases.device_choices import resolve_for

Options = torch.nn.LinearCrossEntropyOptions


def _parts(dtype: torch.dtype) -> tuple[object, tuple[object, ...], dict[str, object]]:
    x = torch.ones(8, 8, dtype=dtype)
    w = torch.ones(8, 8, dtype=dtype)
    target = torch.zeros(8, dtype=torch.int64)
    return x, (w, target), {"reduction": "none", "options": Options(batch_chunk_size=2)}


def test_half_precision_off_the_cpu_accumulates_in_its_own_dtype() -> None:
    """On a device PyTorch's table has no entry for (meta stands in) float16 is
    accumulated in float16 with the compact policy: the reference uses that, and
    the note says so; the device's sample is not touched."""
    parts = _parts(torch.float16)
    (inp, args, kwargs), note = resolve_for(parts, "meta")
    chosen = kwargs["options"]
    assert isinstance(chosen, Options)
    assert (chosen.acc_policy, chosen.acc_dtype) == ("compact", torch.float16)
    assert note is not None and "acc_policy='compact'" in note
    assert inp is parts[0] and args is parts[1]
    assert parts[2]["options"] == Options(batch_chunk_size=2)  # unchanged


def test_the_cpu_and_an_unchanged_choice_keep_the_sample() -> None:
    """On the CPU, and where the device's choice is the CPU's (float32), nothing
    changes and there is no note."""
    for parts, device in (
        (_parts(torch.float16), "cpu"),
        (_parts(torch.float32), "meta"),
    ):
        assert resolve_for(parts, device) == (parts, None)
    plain = (torch.ones(2), (torch.ones(2),), {"alpha": 2})
    assert resolve_for(plain, "meta") == (plain, None)
