"""Local integrity: a damaged artifact is refused in one line, an intact one loads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
    JournalWriter,
    RunArtifact,
    Status,
    artifact_digest,
    count_statuses,
    encode_artifact,
    journal_path,
    latest_path,
    load_result,
    redigested,
    resolve_reference,
    write_history,
    write_snapshot,
)

KEY = "cpu_x86-64"
REPO = Path(__file__).resolve().parents[3]


def _run(
    n: int = 20, *, counts: bool = True, failed: tuple[int, ...] = (7,)
) -> RunArtifact:
    """A compact-sized run: passes, and failures at the rows `failed` names."""
    records = [
        record(sample=i, status=Status.FAILED if i in failed else Status.PASSED)
        for i in range(n)
    ]
    meta = metadata(completed_normally=True)
    if counts:
        meta = metadata(completed_normally=True, counts=count_statuses(records))
    return RunArtifact.from_records(meta, records)


def _history(tmp_path: Path, artifact: RunArtifact | None = None) -> Path:
    return write_history(tmp_path, KEY, artifact or _run())


def _edit(path: Path, change: Any, *, redigest: bool = False) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    if redigest:
        data["digest"] = _sha256_of(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _sha256_of(data: dict[str, Any]) -> str:
    """The documented digest, computed here from its definition, not by the schema."""
    body = {k: v for k, v in data.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _status_column(data: dict[str, Any]) -> dict[str, Any]:
    column: dict[str, Any] = data["results"]["columns"]["status"]
    return column


def _refused(path: Path, message: str) -> None:
    with pytest.raises(ArtifactError, match=message) as info:
        load_result(path)
    assert str(info.value).startswith(f"{path}: ")
    assert "\n" not in str(info.value)


def test_history_carries_the_documented_digest(tmp_path: Path) -> None:
    """The digest is sha256 of the canonical JSON of everything but itself."""
    data = json.loads(_history(tmp_path).read_text(encoding="utf-8"))
    assert data["format_version"] == 3
    assert data["digest"] == _sha256_of(data)
    assert artifact_digest(data) == data["digest"]


def test_flipped_status_index_is_a_digest_mismatch(tmp_path: Path) -> None:
    """Failed turned into passed by one index: refused, not a note."""
    path = _history(tmp_path, _run(failed=(7, 8)))

    def flip(data: dict[str, Any]) -> None:
        column = _status_column(data)
        assert column["codec"] == "intern"
        assert column["table"][column["index"][7]] == "failed"
        column["index"][7] = column["table"].index("passed")

    _edit(path, flip)
    _refused(path, "digest mismatch")


def test_flip_with_a_recomputed_digest_is_caught_by_the_tables(tmp_path: Path) -> None:
    """Re-digested after the flip, the now unused 'failed' entry still refuses it."""
    path = _history(tmp_path)
    _edit(path, lambda d: _status_column(d)["index"].__setitem__(7, 0), redigest=True)
    _refused(path, "column 'status' table entry 1 \\('failed'\\) is used by no row")


def test_counts_that_disagree_refuse_canonical_history(tmp_path: Path) -> None:
    """Metadata counts that differ from the records refuse a history artifact."""
    artifact = _run()
    artifact.metadata.counts["failed"] = 0
    artifact.metadata.counts["passed"] = 20
    path = _history(tmp_path, artifact)
    _refused(path, r"metadata counts disagree with the records \(failed 0 vs 1, p")


def test_empty_counts_state_nothing_and_load(tmp_path: Path) -> None:
    """An artifact whose metadata states no counts has nothing to disagree with."""
    loaded = load_result(_history(tmp_path, _run(counts=False)))
    assert [r.status for r in loaded.results].count(Status.FAILED) == 1


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (-1, "index -1 is out of range for its 2-entry table"),
        (2, "index 2 is out of range for its 2-entry table"),
        (True, "has an index that is not an integer"),
        (0.0, "has an index that is not an integer"),
    ],
)
def test_out_of_range_index_never_loads(tmp_path: Path, bad: Any, message: str) -> None:
    """-1 (Python's last entry), too large, bool or float indexes are refused."""
    path = _history(tmp_path, _run(counts=False))
    _edit(path, lambda d: _status_column(d)["index"].__setitem__(3, bad), redigest=True)
    _refused(path, message)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (["passed", "failed", "passed"], "table repeats an entry"),
        (["passed", 7], "table holds a non-string"),
    ],
)
def test_inconsistent_tables_are_refused(
    tmp_path: Path, table: list[Any], message: str
) -> None:
    """A table the encoder could not have written is refused."""
    path = _history(tmp_path, _run(counts=False))
    _edit(path, lambda d: _status_column(d).__setitem__("table", table), redigest=True)
    _refused(path, message)


def test_negative_count_is_refused(tmp_path: Path) -> None:
    """A block count that is not a size is refused."""
    path = _history(tmp_path, _run(counts=False))
    _edit(path, lambda d: d["not_run"].__setitem__("count", -1), redigest=True)
    _refused(path, "count -1 is not a size")


def test_out_of_range_index_in_a_journal_block_is_refused(tmp_path: Path) -> None:
    """The journal's case_block lines get the same table checks."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case_block([record(sample=i, op=f"o{i % 2}") for i in range(6)])
    line = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    line["records"]["columns"]["op"]["index"][0] = -1
    head = path.read_text(encoding="utf-8").splitlines()[0]
    path.write_text(f"{head}\n{json.dumps(line)}\n", encoding="utf-8")
    _refused(path, "line 2: column 'op' index -1 is out of range")


@pytest.mark.parametrize(
    ("digest", "message"),
    [
        (None, "has no digest"),
        ("md5:00", "is not sha256:<64 hex>"),
    ],
)
def test_format_2_without_a_good_digest_is_refused(
    tmp_path: Path, digest: str | None, message: str
) -> None:
    """A format-2 artifact must carry a well-formed digest."""
    path = _history(tmp_path)
    _edit(path, lambda d: d.update(digest=digest) if digest else d.pop("digest"))
    _refused(path, message)


def test_format_1_without_digest_loads_with_its_other_checks(tmp_path: Path) -> None:
    """Older artifacts load; a flip in one is still caught by its counts."""
    path = _history(tmp_path)

    def older(data: dict[str, Any]) -> None:
        data.pop("digest")
        data["format_version"] = 1

    _edit(path, older)
    assert len(load_result(path).results) == 20
    _edit(path, lambda d: _status_column(d)["table"].reverse())
    _refused(path, "metadata counts disagree")


def test_reformatted_artifact_keeps_its_digest(tmp_path: Path) -> None:
    """Re-indented, re-escaped JSON holds the same content, so it still loads."""
    path = _history(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    assert len(load_result(path).results) == 20


def test_snapshot_tolerates_counts_but_not_damage(tmp_path: Path) -> None:
    """A recovery snapshot's counts may lag; its digest must still match."""
    artifact = _run(failed=(7, 8))
    artifact.metadata.counts["passed"] = 3  # a snapshot taken mid-count
    latest = latest_path(tmp_path, KEY)
    write_snapshot(latest, artifact, 20)
    assert len(load_result(latest).results) == 20
    _edit(latest, lambda d: _status_column(d)["index"].__setitem__(7, 0))
    _refused(latest, "digest mismatch")


def test_plain_encoding_carries_a_digest_too(tmp_path: Path) -> None:
    """The plain form is digested like the compact one."""
    data = json.loads(encode_artifact(_run(2), encoding="plain"))
    assert data["encoding"] == "plain"
    assert data["digest"] == _sha256_of(data)


def test_latest_symlink_out_of_results_is_refused(tmp_path: Path) -> None:
    """A _latest.json linked to a file outside results/ is refused, not followed."""
    elsewhere = tmp_path / "elsewhere"
    target = _history(elsewhere)
    results = tmp_path / "results"
    results.mkdir()
    link = latest_path(results, KEY)
    link.symlink_to(target)
    _refused(link, "is a symlink to a file outside its results directory")
    with pytest.raises(ArtifactError, match="outside its results directory"):
        load_result(results)
    with pytest.raises(ArtifactError, match="outside its results directory"):
        resolve_reference(link)


def test_latest_symlink_inside_results_loads(tmp_path: Path) -> None:
    """A link that stays in results/ is an ordinary file to the loader."""
    target = _history(tmp_path)
    (tmp_path / f"{KEY}_latest.json").unlink()
    latest_path(tmp_path, KEY).symlink_to(target.relative_to(tmp_path))
    assert len(load_result(tmp_path).results) == 20


def test_journal_symlink_out_of_results_is_refused(tmp_path: Path) -> None:
    """A journal linked from outside results/ is refused the same way."""
    outside = tmp_path / "outside.jsonl"
    with JournalWriter(outside) as journal:
        journal.run_start(metadata())
    results = tmp_path / "results"
    results.mkdir()
    journal_path(results, KEY).symlink_to(outside)
    _refused(journal_path(results, KEY), "outside its results directory")


@pytest.mark.parametrize("sample", ["focused", "regression"])
def test_committed_samples_still_load(sample: str) -> None:
    """results/samples load with every check passing, their digest included."""
    loaded = load_result(REPO / "results" / "samples" / sample)
    assert loaded.metadata.counts == count_statuses(loaded.records)


def test_a_format_one_artifact_loads_without_a_digest(tmp_path: Path) -> None:
    """Format 1 (written before the digest) still loads with every other check; the
    focused sample, rewritten as format 1 (version 1, no digest), gives its records;
    format 2 without its digest is refused."""
    (history,) = (REPO / "results" / "samples" / "focused").glob("*_history/*.json")
    data = json.loads(history.read_text(encoding="utf-8"))
    want = load_result(history).records
    del data["digest"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**data, "format_version": 1}), encoding="utf-8")
    assert load_result(old).records == want
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ArtifactError):
        load_result(stripped)


def _surfaces_run() -> RunArtifact:
    """Twenty records over two surface lists: the extra column is stored shared."""
    records = [
        record(sample=i, extra={"surfaces": [f"aten::op{i % 2}", "aten::detach"]})
        for i in range(20)
    ]
    return RunArtifact.from_records(metadata(completed_normally=True), records)


def _extra_column(data: dict[str, Any]) -> dict[str, Any]:
    column: dict[str, Any] = data["results"]["columns"]["extra"]
    assert column["codec"] == "shared"
    return column


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["table"].append(c["table"][0]), "table repeats an entry"),
        (lambda c: c["table"].append(None), "table holds a null"),
        (
            lambda c: c["table"].append({"x": 1}),
            r"table entry 2 \(\{.x.: 1\}\) is used by no row",
        ),
        (lambda c: c["index"].__setitem__(4, 2), "index 2 is out of range"),
        (lambda c: c["index"].__setitem__(4, -1), "index -1 is out of range"),
        (lambda c: c.__setitem__("table", {}), "has no table and index lists"),
    ],
)
def test_inconsistent_shared_tables_are_refused(
    tmp_path: Path, change: Any, message: str
) -> None:
    """A shared table the encoder could not have written is refused by name, even
    with a recomputed digest."""
    path = _history(tmp_path, _surfaces_run())
    assert len(_extra_column(json.loads(path.read_text()))["table"]) == 2
    _edit(path, lambda d: change(_extra_column(d)), redigest=True)
    _refused(path, f"column 'extra' {message}")


def test_a_format_two_artifact_with_raw_columns_still_loads(tmp_path: Path) -> None:
    """What format 2 wrote for the shared columns (every row's value, raw) loads to
    the same records; format 3 itself is what a new history says."""
    path = _history(tmp_path, _surfaces_run())
    want = load_result(path).records

    def older(data: dict[str, Any]) -> None:
        column = _extra_column(data)
        rows = [column["table"][i] for i in column["index"]]
        data["results"]["columns"]["extra"] = {"codec": "raw", "values": rows}
        data["format_version"] = 2

    _edit(path, older, redigest=True)
    assert load_result(path).records == want
    assert [r.extra["surfaces"][0] for r in want[:3]] == [
        "aten::op0",
        "aten::op1",
        "aten::op0",
    ]


def test_a_changed_artifact_is_digested_again_only_when_it_was_intact(
    tmp_path: Path,
) -> None:
    """An archive's scrub changes an artifact's text on purpose: the new text carries
    the digest of its new content (the documented digest, computed here) and loads;
    a file damaged before the change keeps its stale digest; other text is left."""
    records = [record(sample=0, status=Status.FAILED, exception_message="at /w/p/x")]
    path = _history(tmp_path, RunArtifact.from_records(metadata(), records))
    before = path.read_bytes()
    after = before.replace(b"/w/p/x", b"<root>/x")
    assert after != before
    fixed = redigested(before, after)
    data = json.loads(fixed)
    assert data["digest"] == _sha256_of(data) != json.loads(before)["digest"]
    path.write_bytes(fixed)
    assert load_result(path).records[0].exception_message == "at <root>/x"
    damaged = before.replace(b'"failed"', b'"passed"', 1)
    assert (
        redigested(damaged, damaged.replace(b"/w/p/x", b"<root>/x")).count(
            json.loads(before)["digest"].encode()
        )
        == 1
    )
    assert redigested(b"not json /w/p", b"not json <root>") == b"not json <root>"
    assert redigested(b"[1]", b"[2]") == b"[2]"
