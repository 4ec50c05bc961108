"""The capability probes at their simplest: the nonfinite probe on CPU and on meta."""

from __future__ import annotations

import pytest
import torch
from torchcts_runner.probes import _capability_checks


@pytest.mark.parametrize(("device", "meta"), [("cpu", False), ("meta", True)])
def test_the_nonfinite_probe_passes_where_nan_and_inf_survive(
    device: str, meta: bool
) -> None:
    """NaN and +-Inf times 2 stay NaN and +-Inf on CPU; meta only checks the shape."""
    assert _capability_checks(torch, device, meta)["nonfinite"]() is None


def test_the_nonfinite_probe_names_a_device_that_flushes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A copy to the device that turns NaN into 0 is reported with the values."""
    real = torch.Tensor.to
    monkeypatch.setattr(
        torch.Tensor, "to", lambda self, *a, **k: real(self, *a, **k).nan_to_num(0.0)
    )
    problem = _capability_checks(torch, "cpu", False)["nonfinite"]()
    assert problem is not None and "NaN and Inf times 2 gave [0.0" in problem
