"""simdev faults that break only a result's layout (right values, wrong strides) fail
the OpInfo cases whose strides are contract, naming strides; the clean simdev passes
them; cases whose layout is the backend's choice pass under the same fault.

The faults: every strided view computed by copying into row-major order (a rule on
``aten::as_strided``, which transpose, select and permute reach on a backend), and a
conversion that ignores ``memory_format`` (``aten::_to_copy``). One run goes through
torchcts-run: the record is ``failed`` and the report's next-fix action quotes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from suite_faults_helpers import clean_simdev, simdev_manifest, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases.layout_contract import VIEW
from torchcts_schema import (
    Manifest,
    Status,
    load_result,
)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
VIEWS_COPIED = {
    "op": "aten::as_strided",
    "dtype": "float32",
    "fault": "contiguous_copy",
}
FORMAT_IGNORED = {"op": "aten::_to_copy", "fault": "contiguous_copy"}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    """A simdev manifest claiming every capability, in float32."""
    return simdev_manifest(tmp_path, ("float32",))


VIEW_CASES = {
    "opinfo/transpose/forward/float32/0": "strides (6, 2, 1), expected (6, 1, 3)",
    # a view of a noncontiguous base: strides and offset derived from that base
    "opinfo/transpose/noncontiguous/float32/1": "strides (6, 3, 1), expected (12, 6, 2)",
    "opinfo/select/forward/float32/1": "strides (5, 1), expected (25, 5)",
    "opinfo/permute/forward/float32/1": "strides (24, 8, 2, 1), expected (24, 4, 1, 12)",
    "opinfo/expand/forward/float32/0": "strides (25, 5, 1), expected (1, 0, 0)",
}


@pytest.mark.parametrize("case_id", sorted(VIEW_CASES))
def test_clean_simdev_passes_the_view_cases(case_id: str, manifest: Manifest) -> None:
    """Without faults simdev's views are the CPU's, strides and offsets alike."""
    assert simdev_mismatch(case_id, manifest) == ""


@pytest.mark.parametrize("case_id", sorted(VIEW_CASES))
def test_views_computed_by_copying_fail_naming_strides(
    case_id: str, manifest: Manifest
) -> None:
    """A view copied into row-major order has the right values and the wrong
    strides: the case fails saying so, and that a view's strides are contract."""
    found = simdev_mismatch(case_id, manifest, VIEWS_COPIED)
    assert found == f"output: {VIEW_CASES[case_id]} ({VIEW})"


def test_a_contiguous_view_copied_fails_on_its_storage_offset(
    manifest: Manifest,
) -> None:
    """split's second piece is contiguous already: the copy shows in its offset."""
    found = simdev_mismatch("opinfo/split/forward/float32/0", manifest, VIEWS_COPIED)
    assert found == f"output[1]: storage offset 0, expected 50 ({VIEW})"


def test_a_new_tensor_under_the_same_fault_passes(manifest: Manifest) -> None:
    """add's result is the backend's to lay out: the fault changes nothing judged."""
    assert simdev_mismatch("opinfo/add/forward/float32/0", manifest, VIEWS_COPIED) == ""


def test_a_conversion_ignoring_memory_format_fails_naming_strides(
    manifest: Manifest,
) -> None:
    """chalf(memory_format=channels_last) returned row-major fails, naming the
    strides and the memory format that sets them; the clean device passes."""
    case_id = "opinfo/chalf/forward/float32/4"
    assert simdev_mismatch(case_id, manifest) == ""
    found = simdev_mismatch(case_id, manifest, FORMAT_IGNORED)
    assert found == (
        "output: strides (18, 6, 3, 1), expected (18, 1, 9, 3) "
        "(memory_format=torch.channels_last sets the result's layout)"
    )


def test_an_out_tensor_restrided_fails_naming_strides(manifest: Manifest) -> None:
    """add(out=) that leaves the caller's out column-major or padded fails naming
    strides; the functional add under the same fault passes (its layout is free)."""
    restrided = {"op": "aten::add.out", "fault": "wrong_strides"}
    found = simdev_mismatch("opinfo/add/out/float32/1", manifest, restrided)
    assert found == (
        "output.output: strides (2,), expected (1,) "
        "(an out= tensor of the right shape keeps the strides it was given)"
    )
    assert simdev_mismatch("opinfo/add/forward/float32/1", manifest, restrided) == ""


@pytest.mark.parametrize(
    ("case_id", "rule", "found"),
    [
        (
            "out_semantics/out_resized_from_empty/check/-/-",
            {"op": "aten::mul.out", "fault": "wrong_strides"},
            "out_resized_from_empty.strides[0]: expected 3, got 1",
        ),
        (
            "memory_formats/conv2d_channels_last/check/-/-",
            {"op": "aten::convolution*", "fault": "contiguous_copy"},
            "conv2d_channels_last.layout: expected 'channels_last', got 'strides "
            "(144, 36, 6, 1), not channels_last'",
        ),
        (
            "memory_formats/batch_norm_channels_last/check/-/-",
            {"op": "aten::*batch_norm*", "fault": "contiguous_copy"},
            "batch_norm_channels_last.layout: expected 'channels_last', got "
            "'strides (60, 20, 5, 1), not channels_last'",
        ),
    ],
)
def test_resized_outs_and_channels_last_modules_fail_naming_the_layout(
    case_id: str, rule: dict[str, object], found: str, manifest: Manifest
) -> None:
    """A resized out= that is not contiguous, and a conv or batch norm that drops
    channels_last, fail naming strides or the layout; clean simdev passes them."""
    assert simdev_mismatch(case_id, manifest) == ""
    assert simdev_mismatch(case_id, manifest, rule) == found


def test_a_view_fault_fails_the_record_and_the_next_fix_names_strides(
    tmp_path: Path,
) -> None:
    """torchcts-run: the view case is ``failed`` with the strides mismatch, and the
    report's next-fix action quotes it."""
    (tmp_path / "profile.json").write_text(json.dumps({"rules": [VIEWS_COPIED]}))
    source = (ROOT / "manifests" / "simdev.py").read_text()
    demo = 'BACKEND_OPTIONS = {"fault_profile": "demo"}'
    assert demo in source
    mine = source.replace(demo, 'BACKEND_OPTIONS = {"fault_profile": "profile.json"}')
    (tmp_path / "manifest.py").write_text(mine)
    case_id = "opinfo/transpose/forward/float32/0"
    command = [str(BIN / "torchcts-run"), "--manifest", "manifest.py", "-n", "0"]
    command += ["--isolate", "none", "--quiet", "--level", "1", f"torchcts::{case_id}"]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (folder,) = (tmp_path / "results" / "selections").iterdir()
    (record,) = [r for r in load_result(folder).results if r.case_id == case_id]
    assert record.status is Status.FAILED
    assert (record.mismatch or "").startswith("output: strides (6, 2, 1), expected")
    (report,) = folder.glob("*.md")
    fix = report.read_text().split("ext fix", 1)[-1]
    assert "Inspect" in fix and "mismatch: output: strides (6, 2, 1)" in fix
