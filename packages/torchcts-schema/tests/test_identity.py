"""Case ids, node ids and run keys are stable and carry no host identity."""

from __future__ import annotations

import pytest
from torchcts_schema import (
    NEXT_FIX_MEANINGS,
    STATUS_MEANINGS,
    NextFix,
    Status,
    case_id_for_node,
    default_next_fix,
    make_case_id,
    make_run_key,
    node_id_for_case,
    split_case_id,
)


def test_case_id_round_trips_through_node_id() -> None:
    """case id -> node id -> case id, and the parts split back."""
    case_id = make_case_id("opinfo", "nn.functional.relu", "forward", "float16", 3)
    assert case_id == "opinfo/nn.functional.relu/forward/float16/3"
    assert case_id_for_node(node_id_for_case(case_id)) == case_id
    assert split_case_id(case_id) == (
        "opinfo",
        "nn.functional.relu",
        "forward",
        "float16",
        3,
    )
    assert split_case_id(
        make_case_id("views", "view_shares_storage", "property", None, None)
    )[3:] == (None, None)


def test_case_id_refuses_separator_in_segment() -> None:
    """A '/' inside a segment would break the bijection, so it is refused."""
    with pytest.raises(ValueError, match="segment"):
        make_case_id("opinfo", "a/b", "forward", "float32", 0)


def test_run_key_is_slugged_device_plus_hardware() -> None:
    """The run key is device type and hardware key, file-name safe."""
    assert make_run_key("cuda", "NVIDIA H200 141GB") == "cuda_nvidia-h200-141gb"
    assert make_run_key("simdev", "x86_64 2cpu 24gb") == "simdev_x86-64-2cpu-24gb"
    assert make_run_key("mps", "/home/u/../x") == "mps_home-u-x"


def test_statuses_are_exactly_the_seeds_seven() -> None:
    """The seven statuses, nothing more, each with its meaning."""
    assert [s.value for s in Status] == [
        "passed",
        "failed",
        "error",
        "unsupported",
        "not_run",
        "skipped",
        "crashed",
    ]
    assert set(STATUS_MEANINGS) == set(Status)


def test_next_fix_follows_the_seed_order() -> None:
    """Next-fix categories keep the seed's order and every status maps sensibly."""
    assert list(NEXT_FIX_MEANINGS) == list(NextFix)
    assert default_next_fix(Status.PASSED) is None
    assert default_next_fix(Status.CRASHED) is NextFix.CRASH_EVIDENCE
    assert (
        default_next_fix(Status.FAILED, harness_problem=True) is NextFix.CONFIGURATION
    )
