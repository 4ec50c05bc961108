"""The backend evidence store: packing runs, and the lint check that guards it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from evidence_builders import make_project, record
from torchcts_evidence import (
    EvidenceError,
    PackOptions,
    build_entries,
    check_store,
    pack_run,
)
from torchcts_schema import (
    RUNTIME_MODIFICATIONS_OPTION,
    HostIdentity,
    RunArtifact,
    RunMetadata,
    Status,
    load_result,
)

REPO = Path(__file__).resolve().parents[3]
IDENT = HostIdentity(host_names=("planted-host-q7x",), user_names=("planted-user-q7x",))


def _pack(tmp_path: Path, **options: object) -> tuple[Path, list[dict]]:  # type: ignore[type-arg]
    project = make_project(tmp_path / "p")
    store = tmp_path / "store"
    store.mkdir(exist_ok=True)
    target, _ = pack_run(project.results, store, PackOptions(**options), IDENT)  # type: ignore[arg-type]
    return store, [json.loads(line) for line in target.read_text().splitlines()]


def test_pack_writes_one_path_free_entry_per_surface(tmp_path: Path) -> None:
    """Executed cases become entries with device, gate, versions, result and intent."""
    store, entries = _pack(
        tmp_path, backend_gate="simdev:python", modifications=("fault_profile=segv",)
    )
    assert [e["surface"] for e in entries] == [
        "opinfo/add/forward",
        "opinfo/mul/forward",
        "opinfo/sub/forward",
    ]  # not_run 'div' is not evidence of anything
    by_surface = {e["surface"]: e for e in entries}
    assert by_surface["opinfo/mul/forward"]["result"] == "crashed"
    assert by_surface["opinfo/sub/forward"]["counts"] == {"failed": 1}
    first = entries[0]
    assert first["device"] == "simdev"
    assert first["backend_gate"] == "simdev:python"
    assert first["torch_version"] == "2.13.0+cpu"
    assert first["expected_source"] == "cpu_reference"
    assert first["modifications"] == ["fault_profile=segv"]
    assert first["command_intent"] == "torchcts-run --manifest simdev.py"
    assert first["run_status"] == "completed"
    assert check_store(store, IDENT) == []
    index = json.loads((store / "index.json").read_text())
    assert index["backends"]["simdev"]["entries"] == 3


def test_entries_are_keyed_by_the_dispatcher_overloads_records_reached(
    tmp_path: Path,
) -> None:
    """A record naming the overloads its case reached (extra surfaces, from the
    coverage trace) gives one entry per overload: add's forward and its out= case
    share aten::_to_copy, and --surface picks one overload."""
    records = [
        record("add", extra={"surfaces": ["aten::add.Tensor", "aten::_to_copy"]}),
        record(
            "add",
            Status.FAILED,
            sample=1,
            extra={"surfaces": ["aten::add.out", "aten::_to_copy"]},
        ),
    ]
    project = make_project(tmp_path / "p", records=records)
    artifact = load_result(project.results)
    entries = build_entries(artifact, PackOptions(), HostIdentity())
    by_surface = {e["surface"]: e for e in entries}
    assert sorted(by_surface) == ["aten::_to_copy", "aten::add.Tensor", "aten::add.out"]
    assert by_surface["aten::add.out"]["counts"] == {"failed": 1}
    assert by_surface["aten::_to_copy"]["counts"] == {"failed": 1, "passed": 1}
    picked = build_entries(artifact, PackOptions(surfaces=("*.out",)), HostIdentity())
    assert [e["surface"] for e in picked] == ["aten::add.out"]


def test_surface_globs_select_entries(tmp_path: Path) -> None:
    """--surface keeps only matching dispatcher surfaces."""
    _, entries = _pack(tmp_path, surfaces=("opinfo/mul/*",))
    assert [e["surface"] for e in entries] == ["opinfo/mul/forward"]


def test_the_same_run_is_not_packed_twice(tmp_path: Path) -> None:
    """Packing a run already in the store is refused."""
    store, _ = _pack(tmp_path)
    with pytest.raises(EvidenceError, match="already recorded"):
        pack_run(tmp_path / "p" / "results", store, PackOptions(), IDENT)


def test_labels_with_paths_are_refused(tmp_path: Path) -> None:
    """A modification label holding a path is refused before anything is written."""
    with pytest.raises(EvidenceError, match="not a path-free label"):
        _pack(tmp_path, modifications=("profile=/home/x/p.json",))


def test_planted_identity_in_the_command_is_not_stored(tmp_path: Path) -> None:
    """An absolute manifest path in the run's command is cut to its file name."""
    project = make_project(
        tmp_path / "p",
        command="torchcts-run --manifest=/home/planted-user-q7x/m/simdev.py",
    )
    store = tmp_path / "store"
    target, _ = pack_run(project.results, store, PackOptions(), IDENT)
    text = target.read_text()
    assert "planted" not in text and "/home" not in text
    assert "--manifest=simdev.py" in text


def test_check_finds_schema_path_index_and_stray_file_problems(tmp_path: Path) -> None:
    """Lint reports a bad key, a path, a stale index and a stray file, each by name."""
    store, entries = _pack(tmp_path)
    bad = dict(entries[0], command_intent="run /home/someone/x.py", extra=1)
    with (store / "simdev.jsonl").open("a") as fh:
        fh.write(json.dumps(bad) + "\n")
    (store / "audit.tar").write_text("x")
    problems = "\n".join(check_store(store, IDENT))
    assert "unknown key 'extra'" in problems
    assert "command_intent" in problems
    assert "absolute path" in problems
    assert "simdev.entries is 3, the file says 4" in problems
    assert "audit.tar: not an evidence file" in problems


def test_check_names_duplicates_and_missing_index(tmp_path: Path) -> None:
    """A duplicated line and a deleted index are reported."""
    store, _ = _pack(tmp_path)
    lines = (store / "simdev.jsonl").read_text().splitlines()
    (store / "simdev.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    (store / "index.json").unlink()
    problems = "\n".join(check_store(store, IDENT))
    assert "duplicate entry" in problems
    assert "index.json: missing" in problems


def test_check_evidence_tool_exit_status(tmp_path: Path) -> None:
    """tools/check_evidence.py exits 0 on a clean store and 1 naming a broken one."""
    store, _ = _pack(tmp_path)
    tool = [sys.executable, str(REPO / "tools" / "check_evidence.py")]
    ok = subprocess.run([*tool, str(store)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
    (store / "simdev.jsonl").write_text("{not json\n")
    broken = subprocess.run([*tool, str(store)], capture_output=True, text=True)
    assert broken.returncode == 1
    assert "simdev.jsonl:1: not JSON" in broken.stdout


def test_committed_store_is_valid() -> None:
    """The repository's own evidence/backends/ passes the check."""
    assert check_store(REPO / "evidence" / "backends") == []


def test_backend_options_become_modification_labels(tmp_path: Path) -> None:
    """Run options (fault profile, forced isolation) are labelled; a path keeps its key."""
    project = make_project(tmp_path / "p")
    artifact = load_result(project.results)
    options = {
        "backend_options": {"fault_profile": "demo", "profile_file": "/home/x/p.json"},
        "isolate": "all",
    }
    meta = RunMetadata.from_dict({**artifact.metadata.to_dict(), "options": options})
    entries = build_entries(
        RunArtifact(meta, artifact.results), PackOptions(), HostIdentity()
    )
    assert entries[0]["modifications"] == [
        "fault_profile=demo",
        "isolate=all",
        "profile_file",
    ]


def test_recorded_runtime_modifications_become_labels(tmp_path: Path) -> None:
    """What the runner records as runtime modifications (the MPS fallback, CUDA's
    launch blocking) is labelled on every entry, beside the submitter's own."""
    project = make_project(tmp_path / "p")
    artifact = load_result(project.results)
    recorded = ["PYTORCH_ENABLE_MPS_FALLBACK=0", "CUDA_LAUNCH_BLOCKING=1"]
    options = {RUNTIME_MODIFICATIONS_OPTION: recorded}
    meta = RunMetadata.from_dict({**artifact.metadata.to_dict(), "options": options})
    entries = build_entries(
        RunArtifact(meta, artifact.results),
        PackOptions(modifications=("mine=1",)),
        HostIdentity(),
    )
    assert entries[0]["modifications"] == [
        "CUDA_LAUNCH_BLOCKING=1",
        "PYTORCH_ENABLE_MPS_FALLBACK=0",
        "mine=1",
    ]


def test_a_lone_surrogate_in_the_command_is_packed_and_passes_the_check(
    tmp_path: Path,
) -> None:
    """A command holding a lone surrogate (a results path that is not UTF-8) packs:
    the intent keeps it as a JSON escape, the lint check accepts the store, and
    the run id of a command in plain text is still its UTF-8 digest."""
    odd = "torchcts-run --results r\udcff"
    project = make_project(tmp_path / "p", command=odd)
    store = tmp_path / "store"
    target, _ = pack_run(project.results, store, PackOptions(), IDENT)
    assert "\\udcff" in target.read_text(encoding="utf-8")
    entry = json.loads(target.read_text(encoding="utf-8").splitlines()[0])
    assert entry["command_intent"] == odd
    assert check_store(store, IDENT) == []
    plain = "torchcts-run --manifest manifests/simdev.py"
    artifact = load_result(make_project(tmp_path / "q").results)
    text = "\n".join([artifact.metadata.run_key, artifact.metadata.started_at])
    text += "\n" + "\n".join([artifact.metadata.manifest_digest, plain])
    expected = "r-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    assert build_entries(artifact, PackOptions(), IDENT)[0]["run"] == expected
