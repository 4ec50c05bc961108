"""Op families, error signatures, cluster order and rerun commands."""

from __future__ import annotations

import pytest
from torchcts_report import (
    build_clusters,
    error_signature,
    normalise_message,
    op_family,
    rerun_command,
)
from torchcts_schema import CrashInfo, CrashKind, Status


@pytest.mark.parametrize(
    ("op", "family"),
    [
        ("add", "add"),
        ("add_", "add"),
        ("max.reduction_with_dim", "max"),
        ("nn.functional.conv2d", "nn.functional.conv"),
        ("nn.functional.max_pool3d", "nn.functional.max_pool"),
        ("linalg.svd", "linalg.svd"),
        ("special.i0e", "special.i0e"),
        ("atan2", "atan2"),
        ("", "(unknown)"),
    ],
)
def test_op_family(op, family):
    """Variant suffixes, in-place underscores and spatial dims fold into one family."""
    assert op_family(op) == family


@pytest.mark.parametrize(
    ("message", "signature"),
    [
        ("values differ at 3 of 12 elements", "values differ at N of N elements"),
        ("max abs diff 1.5e-03 > 1e-05", "max abs diff N > N"),
        ("bad pointer 0x7ffd1234", "bad pointer 0x?"),
        ("shape [3, 4] != [4, 3]", "shape [N, N] != [N, N]"),
        ("in /tmp/a1/b2/c.py line 7", "in <path> line N"),
        ("float32 vs int64", "float32 vs int64"),
        ("first line 1\nsecond line 2", "first line N"),
        ("", ""),
    ],
)
def test_normalise_message(message, signature):
    """Numbers, addresses and paths leave the signature; dtype names stay."""
    assert normalise_message(message) == signature


def test_signatures_per_status(syn):
    """Each failing status has a signature built from its own details."""
    crash = syn.record(
        status=Status.CRASHED, crash=CrashInfo(CrashKind.SUBPROCESS, exit_code=134)
    )
    assert error_signature(crash) == "crashed: subprocess exit code 134"
    bare = syn.record(status=Status.CRASHED)
    assert error_signature(bare) == "crashed (no crash details recorded)"
    failed = syn.record(status=Status.FAILED, mismatch="off by 2")
    assert error_signature(failed) == "mismatch: off by N"
    error = syn.record(
        status=Status.ERROR, exception_type="ValueError", exception_message="x 12"
    )
    assert error_signature(error) == "ValueError: x N"
    silent = syn.record(status=Status.ERROR)
    assert error_signature(silent) == "error (no message recorded)"


def test_clusters_group_and_order(syn):
    """Clusters group by family, signature and dtype, largest first, then by name."""
    r = syn.record
    recs = [
        r("add", "float32", Status.FAILED, sample=i, mismatch=f"diff {i}")
        for i in range(3)
    ] + [
        r("add_", "float32", Status.FAILED, sample=9, mismatch="diff 99"),
        r("add", "float16", Status.FAILED, mismatch="diff 1"),
        r("sub", "float32", Status.ERROR, exception_type="E", exception_message="m"),
        r("sub", "float32", Status.PASSED, sample=1),
        r("sub", "float32", Status.NOT_RUN, sample=2),
    ]
    clusters = build_clusters(recs)
    assert [(c.family, c.dtype, c.size) for c in clusters] == [
        ("add", "float32", 4),
        ("add", "float16", 1),
        ("sub", "float32", 1),
    ]
    assert clusters[0].example == "opinfo/add/forward/float32/0"
    assert clusters[0].case_ids == tuple(sorted(clusters[0].case_ids))


def test_equal_sized_clusters_put_crashes_first(syn):
    """Among clusters of one size, crashes come before failures and errors."""
    recs = [
        syn.record("a", status=Status.ERROR, exception_type="E"),
        syn.record("z", status=Status.CRASHED, crash=CrashInfo(CrashKind.HANG)),
    ]
    assert [c.status for c in build_clusters(recs)] == [Status.CRASHED, Status.ERROR]


def test_rerun_command_uses_the_run_manifest(syn):
    """The rerun command names the manifest from the run's command line."""
    meta = syn.metadata(command="torchcts-run --manifest=manifests/cuda.py -x")
    assert rerun_command(meta, "opinfo/add/forward/float32/0") == (
        "torchcts-run --manifest 'manifests/cuda.py' "
        "'torchcts::opinfo/add/forward/float32/0'"
    )


def test_rerun_command_never_shares_absolute_paths(syn):
    """An absolute manifest path is reduced to its name (host identity stays home)."""
    meta = syn.metadata(command="torchcts-run --manifest /home/alice/m/manifest.py")
    assert "/home" not in rerun_command(meta, "c/a/b/-/-")
    meta = syn.metadata(command="torchcts-run", options={"manifest": "C:\\u\\m.py"})
    assert rerun_command(meta, "c/a/b/-/-").startswith("torchcts-run --manifest 'm.py'")


def test_rerun_command_quotes_hostile_ids(syn):
    """A case id with shell metacharacters is quoted so it cannot run commands."""
    meta = syn.metadata(command="unparsable 'quote")
    command = rerun_command(meta, "x'; rm -rf ~; '")
    assert command == (
        "torchcts-run --manifest 'manifest.py' 'torchcts::x'\"'\"'; rm -rf ~; '\"'\"''"
    )
