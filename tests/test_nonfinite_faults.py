"""A backend that loses NaN and Inf passes every finite case and fails the nonfinite
ones, with a mismatch that says where CPU has the non-finite values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torchcts_simdev
from torchcts_cases import get_case, prepare
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


@pytest.fixture(autouse=True)
def clean_afterwards(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts and ends on the clean profile."""
    monkeypatch.delenv(torchcts_simdev.ENV_VAR, raising=False)
    torchcts_simdev.configure("clean")
    yield
    torchcts_simdev.configure("clean")


def _verdict(case_id: str, manifest: Manifest, rules: list[object]) -> str | None:
    """None when the case passes on simdev under `rules`, else its mismatch."""
    case = prepare(get_case(case_id), manifest)
    expected = case.reference()
    torchcts_simdev.configure({"name": "test", "rules": rules})
    try:
        observed = case.run_on("simdev")
    finally:
        torchcts_simdev.configure("clean")
    verdict = case.judge(expected, observed)
    return None if verdict.ok else verdict.mismatch or "?"


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
