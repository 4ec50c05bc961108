"""Dtype discovery's files: the probe manifest, the evidence it yields, the proposal.

No device and no run: records and manifests are written by hand, and every generated
manifest is read back through the schema's loader.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchcts_cases.discovery_decide import decide
from torchcts_cases.discovery_evidence import EvidenceError, Verdict, collect_cells
from torchcts_cases.discovery_probe import probe_manifest_text, write_probe_manifest
from torchcts_cases.discovery_text import Commands, proposed_manifest
from torchcts_schema import (
    DTYPE_NAMES,
    CaseRecord,
    ExpectedSource,
    ManifestError,
    NotRunReason,
    Status,
    load_manifest,
    read_manifest_source,
    validate_manifest,
)

USER = '''"""A user's manifest."""

DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "clean"}

# float16 narrowed by hand
DTYPES = {"float32": True, "float16": "add|sin"}

CAPABILITIES = ["forward", "method"]  # the user's own choice
LEVEL = 2
UNSUPPORTED_PATTERNS = ["no kernel"]
OPS = {"exclude": {"to_sparse": "dense only"}}
'''
NAMES = {"add": "add", "sin": "sin", "mul": "mul", "where": "where"}


def _record(
    op: str,
    variant: str,
    dtype: str,
    status: Status,
    reason: NotRunReason | None = None,
) -> CaseRecord:
    case_id = f"opinfo/{op}/{variant}/{dtype}/0"
    return CaseRecord(
        case_id=case_id,
        node_id=f"torchcts::{case_id}",
        op=op,
        variant=variant,
        dtype=dtype,
        sample=0,
        level=2,
        status=status,
        expected_source=ExpectedSource.CPU_REFERENCE,
        not_run_reason=reason,
    )


def _commands(**kw: object) -> Commands:
    base: dict[str, object] = {
        "runner": "bin/torchcts-run",
        "proposed": "proposed.py",
        "probe": "results/discovery/probe_manifest.py",
        "op_globs": ("add", "sin", "mul"),
        "dtypes": ("float16",),
        "level": 2,
        "probe_results": "results/discovery",
        "environment": (("TORCHCTS_SIMDEV_PROFILE", "float16_partial"),),
    }
    base.update(kw)
    return Commands(**base)  # type: ignore[arg-type]


def test_probe_manifest_claims_everything_and_keeps_the_rest(tmp_path: Path) -> None:
    """Every dtype, forward and backward, level 8, N samples; the user's device,
    backend, unsupported patterns and OPS unchanged; the same text every time."""
    source = tmp_path / "m.py"
    source.write_text(USER, encoding="utf-8")
    path = write_probe_manifest(source, tmp_path / "results", 3)
    assert path == tmp_path / "results" / "discovery" / "probe_manifest.py"
    probe = load_manifest(path)
    assert probe.dtypes == {d: True for d in DTYPE_NAMES}
    assert probe.capabilities == ("forward", "backward")
    assert (probe.level, probe.max_samples_per_op) == (8, 3)
    assert probe.unsupported_patterns == ("no kernel",)
    assert probe.ops_exclude == {"to_sparse": "dense only"}
    assert probe.backend_options == {"fault_profile": "clean"}
    assert path.read_text(encoding="utf-8") == probe_manifest_text(source, 3)
    assert "from m.py." in path.read_text() and str(tmp_path) not in path.read_text()


def test_collect_cells_counts_what_the_probe_ran() -> None:
    """Probed variants counted per status; what the probe left out is not evidence."""
    records = [
        _record("add", "forward", "float16", Status.PASSED),
        _record("add", "backward", "float16", Status.UNSUPPORTED),
        _record("add", "forward", "float16", Status.NOT_RUN, NotRunReason.SAMPLE_LIMIT),
        _record("add", "method", "float16", Status.FAILED),  # not a probe variant
        _record(
            "sin",
            "forward",
            "float16",
            Status.NOT_RUN,
            NotRunReason.COMPARISON_NOT_VALID,
        ),
    ]
    cells = collect_cells(records, NAMES)
    assert sorted(cells) == [("add", "float16"), ("sin", "float16")]
    add = cells[("add", "float16")]
    assert add.counts == {"backward": {"unsupported": 1}, "forward": {"passed": 1}}
    assert add.verdict is Verdict.PARTIAL
    assert cells[("sin", "float16")].verdict is Verdict.UNTESTED


@pytest.mark.parametrize("op", ["nosuchop", "add\nBACKEND_IMPORT = 'evil'", "add)|(.*"])
def test_collect_cells_refuses_an_op_this_torch_lacks(op: str) -> None:
    """A crafted or foreign record names its case, and never reaches the text."""
    with pytest.raises(EvidenceError, match="is not an OpInfo op of this torch"):
        collect_cells([_record(op, "forward", "float16", Status.PASSED)], NAMES)


def _proposal_text(tmp_path: Path, commands: Commands) -> str:
    source = tmp_path / "m.py"
    source.write_text(USER, encoding="utf-8")
    manifest = load_manifest(source)
    records = [
        _record(op, variant, "float16", status)
        for op, status in (
            ("add", Status.PASSED),
            ("mul", Status.PASSED),
            ("sin", Status.UNSUPPORTED),
        )
        for variant in ("forward", "backward")
    ]
    cells = collect_cells(records, NAMES)
    proposal = decide(cells, NAMES, manifest.dtypes, ["float16"], subset=True)
    return proposed_manifest(
        USER, source, manifest, proposal, cells, commands, "a probe"
    )


def test_proposal_replaces_dtypes_and_ops_and_keeps_the_rest(tmp_path: Path) -> None:
    """The user's other keys and comments stay; the old DTYPES comment goes with it."""
    text = _proposal_text(tmp_path, _commands())
    values = read_manifest_source(text, "p.py")
    manifest = validate_manifest(values, Path("p.py"), "x")
    assert manifest.dtypes == {"float32": True, "float16": "add|mul"}
    assert manifest.ops_exclude == {"to_sparse": "dense only"}
    assert values["CAPABILITIES"] == ["forward", "method"]
    assert "# the user's own choice" in text and "narrowed by hand" not in text
    assert text.count("DTYPES = {") == 1 and text.count("OPS = {") == 1
    assert (
        "#   sin: unsupported, no longer claimed: forward 0/0/1/0/0, backward 0/0/1/0/0"
        in text
    )
    assert (
        "#     TORCHCTS_SIMDEV_PROFILE=float16_partial bin/torchcts-run --manifest "
        "results/discovery/probe_manifest.py --results results/discovery "
        "--op sin --dtype float16" in text
    )
    assert (
        "#   confirm: TORCHCTS_SIMDEV_PROFILE=float16_partial bin/torchcts-run "
        "--manifest proposed.py --dtype float16 "
        "--level 4 --op add --op sin --op mul" in text
    )


def test_hostile_text_never_becomes_manifest_code(tmp_path: Path) -> None:
    """A glob or path with a newline (from a crafted artifact) is one clear error."""
    for evil in (
        _commands(op_globs=("add\nBACKEND_IMPORT = 'os'",)),
        _commands(environment=(("TORCHCTS_X", "1\nBACKEND_IMPORT = 'os'"),)),
    ):
        with pytest.raises(ManifestError, match="unprintable"):
            _proposal_text(tmp_path, evil)
