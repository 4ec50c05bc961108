"""The results layout: every name a run leaves, spelt as the architecture page gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchcts_schema import (
    GLOB_KINDS,
    HTML_SUFFIX,
    JUNIT_SUFFIX,
    LOCK_NAME,
    MARKDOWN_SUFFIX,
    REPORT_SUFFIXES,
    ArtifactError,
    ResultsLayout,
    RunLock,
    every_key_pattern,
    glob_every_key,
    history_dir,
    journal_path,
    latest_path,
    run_key_of,
    run_keys,
)

KEY = "simdev_x86-64-2cpu-24gb"


def test_every_name_matches_the_documented_spelling(tmp_path: Path) -> None:
    """Each property gives the name the architecture page lists for it."""
    layout = ResultsLayout(tmp_path, KEY)
    names = {
        "latest": layout.latest,
        "history": layout.history_dir,
        "journal": layout.journal,
        "journal_prev": layout.journal_prev,
        "md": layout.report(".md"),
        "html": layout.report(".html"),
        "junit": layout.report(".junit.xml"),
        "runlog": layout.runlog,
        "runlog_prev": layout.runlog_prev,
        "crashes": layout.crashes_dir,
        "scratch": layout.scratch,
        "probe": layout.probe_failures(41),
        "oracle": layout.oracle_failures(42),
        "adaptive": layout.adaptive_decisions,
        "lock": layout.lock,
        "coverage": layout.coverage_dir,
        "repro": layout.repro_script("opinfo~add~forward~float32~0"),
        "inputs": layout.repro_inputs("opinfo~add~forward~float32~0"),
    }
    assert {k: p.relative_to(tmp_path).as_posix() for k, p in names.items()} == {
        "latest": f"{KEY}_latest.json",
        "history": f"{KEY}_history",
        "journal": f"{KEY}_journal.jsonl",
        "journal_prev": f"{KEY}_journal.jsonl.prev",
        "md": f"{KEY}.md",
        "html": f"{KEY}.html",
        "junit": f"{KEY}.junit.xml",
        "runlog": f"{KEY}_runlog.txt",
        "runlog_prev": f"{KEY}_runlog.txt.prev",
        "crashes": f"{KEY}_crashes",
        "scratch": f".{KEY}_scratch",
        "probe": f"{KEY}_harness_probe_failures_41.jsonl",
        "oracle": f"{KEY}_opinfo_oracle_failures_42.jsonl",
        "adaptive": f"{KEY}_adaptive_isolation.json",
        "lock": ".torchcts.lock",
        "coverage": "coverage",
        "repro": f"{KEY}_repros/opinfo~add~forward~float32~0.py",
        "inputs": f"{KEY}_repros/opinfo~add~forward~float32~0.pt",
    }
    for stem in ("", ".hidden", "a/b", "a\\b"):
        with pytest.raises(ValueError):
            layout.repro_inputs(stem)


def test_lock_is_the_run_locks_one_file_per_directory(tmp_path: Path) -> None:
    """layout.lock is RunLock's LOCK_NAME, the same for every run key."""
    assert ResultsLayout(tmp_path, KEY).lock == tmp_path / LOCK_NAME
    assert ResultsLayout(tmp_path, "other").lock == RunLock(tmp_path).path


def test_glob_every_key_lists_each_kind_over_all_keys(tmp_path: Path) -> None:
    """glob_every_key finds a kind's files of every key, sorted, and nothing else."""
    for key in ("b", "a"):
        layout = ResultsLayout(tmp_path, key)
        layout.probe_failures(1).write_text("", encoding="utf-8")
        layout.oracle_failures(2).write_text("", encoding="utf-8")
        for directory in (layout.history_dir, layout.crashes_dir):
            directory.mkdir()
            (directory / "x.json").write_text("{}", encoding="utf-8")
    (tmp_path / "a_latest.json").write_text("{}", encoding="utf-8")
    found = {
        kind: [
            p.relative_to(tmp_path).as_posix() for p in glob_every_key(tmp_path, kind)
        ]
        for kind in GLOB_KINDS
    }
    assert found == {
        "probe_failures": [
            "a_harness_probe_failures_1.jsonl",
            "b_harness_probe_failures_1.jsonl",
        ],
        "oracle_failures": [
            "a_opinfo_oracle_failures_2.jsonl",
            "b_opinfo_oracle_failures_2.jsonl",
        ],
        "history": ["a_history/x.json", "b_history/x.json"],
        "crashes": ["a_crashes/x.json", "b_crashes/x.json"],
    }
    assert every_key_pattern("crashes") == "*_crashes/*.json"
    one_key = ResultsLayout(tmp_path, "a")
    assert [one_key.glob(k) for k in GLOB_KINDS] == [
        glob_every_key(tmp_path, k)[:1] for k in GLOB_KINDS
    ]


def test_thin_functions_agree_with_the_layout(tmp_path: Path) -> None:
    """latest_path, history_dir and journal_path are the layout's own paths."""
    assert latest_path(tmp_path, KEY) == tmp_path / f"{KEY}_latest.json"
    assert history_dir(tmp_path, KEY) == tmp_path / f"{KEY}_history"
    assert journal_path(tmp_path, KEY) == tmp_path / f"{KEY}_journal.jsonl"


def test_report_suffixes_are_the_named_ones() -> None:
    """REPORT_SUFFIXES is markdown, HTML and JUnit, in that order."""
    assert REPORT_SUFFIXES == (MARKDOWN_SUFFIX, HTML_SUFFIX, JUNIT_SUFFIX)
    assert REPORT_SUFFIXES == (".md", ".html", ".junit.xml")


def test_unknown_report_suffix_is_refused(tmp_path: Path) -> None:
    """A report suffix the layout does not name is a ValueError, not a new file."""
    with pytest.raises(ValueError, match=r"'\.txt' is not one of"):
        ResultsLayout(tmp_path, KEY).report(".txt")


@pytest.mark.parametrize("key", ["", "a/b", "..\\x"])
def test_run_key_with_a_separator_is_refused(tmp_path: Path, key: str) -> None:
    """A run key that would leave results_dir is one ArtifactError line."""
    with pytest.raises(ArtifactError, match="is not a plain file name"):
        ResultsLayout(tmp_path, key)


def test_glob_lists_one_keys_files_sorted(tmp_path: Path) -> None:
    """glob lists this key's per-process files only, sorted, and [] when absent."""
    layout = ResultsLayout(tmp_path, KEY)
    other = ResultsLayout(tmp_path, KEY + "x")
    for path in (
        layout.probe_failures(9),
        layout.probe_failures(10),
        other.probe_failures(1),
        layout.oracle_failures(3),
    ):
        path.write_text("", encoding="utf-8")
    assert [p.name for p in layout.glob("probe_failures")] == [
        f"{KEY}_harness_probe_failures_10.jsonl",
        f"{KEY}_harness_probe_failures_9.jsonl",
    ]
    assert [p.name for p in layout.glob("oracle_failures")] == [
        f"{KEY}_opinfo_oracle_failures_3.jsonl"
    ]
    assert layout.glob("history") == []
    assert layout.glob("crashes") == []


def test_glob_treats_pattern_characters_in_a_key_literally(tmp_path: Path) -> None:
    """A key holding '[' or '*' matches only itself."""
    odd = ResultsLayout(tmp_path, "k[1]*")
    odd.probe_failures(1).write_text("", encoding="utf-8")
    ResultsLayout(tmp_path, "k1x").probe_failures(2).write_text("", encoding="utf-8")
    assert [p.name for p in odd.glob("probe_failures")] == [
        "k[1]*_harness_probe_failures_1.jsonl"
    ]


def test_run_keys_come_from_latest_and_journal_names(tmp_path: Path) -> None:
    """Only latest and journal names give run keys; hidden temp files do not."""
    for name in (
        f"{KEY}_latest.json",
        "b_journal.jsonl",
        f".{KEY}_latest.json.abc.tmp",
        "._latest.json",
        "_latest.json",
        f"{KEY}.md",
    ):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert run_keys(tmp_path) == {KEY, "b"}
    assert run_key_of("c_journal.jsonl.prev") is None
