"""A backend that loses NaN and Inf passes every finite case and fails the nonfinite
ones, with a mismatch that says where CPU has the non-finite values."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_faults_helpers import clean_simdev, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_schema import Manifest, load_manifest

FLUSH = {"op": "aten::maximum.out", "fault": "flush_nonfinite", "note": "fast-math"}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    """simdev, float32, forward and nonfinite."""
    path = tmp_path / "m.py"
    path.write_text(
        'DEVICE = "simdev"\nCAPABILITIES = ["forward", "nonfinite"]\n'
        'DTYPES = {"float32": True}\n'
    )
    return load_manifest(path)


def _verdict(
    case_id: str, manifest: Manifest, rules: list[dict[str, object]]
) -> str | None:
    """None when the case passes on simdev under `rules`, else its mismatch."""
    return simdev_mismatch(case_id, manifest, *rules) or None


@pytest.mark.parametrize("sample", range(4))
def test_flushing_nan_passes_forward_and_fails_nonfinite(
    manifest: Manifest, sample: int
) -> None:
    """maximum with NaN flushed to 0: its finite forward samples cannot tell; the same
    samples with NaN and Inf placed in them fail naming the element."""
    assert (
        _verdict(f"opinfo/maximum/forward/float32/{sample}", manifest, [FLUSH]) is None
    )
    nonfinite = f"opinfo/maximum/nonfinite/float32/{sample}"
    assert _verdict(nonfinite, manifest, []) is None  # clean simdev agrees with CPU
    mismatch = _verdict(nonfinite, manifest, [FLUSH])
    assert mismatch is not None and "NaN/Inf not where CPU has them" in mismatch
    assert "expected nan, got 0.0" in mismatch or "expected inf" in mismatch
