"""The scorecard's claimed-vs-discovered section, from hand-written discovery files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torchcts_report import load_input, render_html, render_markdown

TITLE = "## Claimed vs discovered dtype support"


def _dtype(dtype: str, claimed: Any, proposed: Any, **ops: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"dtype": dtype, "claimed": claimed, "proposed": proposed}
    entry["probed"] = ops.pop("probed", True)
    for key in ("works", "kept", "declared", "in_ops", "inexpressible", "untested"):
        entry[key] = ops.get(key, [])
    return entry


def _doc(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": "torchcts-discovery",
        "version": 1,
        "subset": False,
        "dtypes": [
            _dtype("float32", True, True, works=["add", "mul"], kept=["sin"]),
            _dtype(
                "float16",
                True,
                "(?!(?:cos|tan)$).*",
                works=["add"],
                declared=["cos"],
                in_ops=["tan"],
                inexpressible=["round"],
                untested=["sum"],
            ),
            _dtype("int8", False, False, probed=False),  # no claim, no evidence: hidden
            _dtype("bfloat16", "add|mul", False, probed=False),
        ],
        "ops_exclude": [],
        "cells": [
            {"op": "add", "dtype": "float32", "verdict": "works", "counts": {}},
            {"op": "sin", "dtype": "float32", "verdict": "faulty", "counts": {}},
            {"op": "cos", "dtype": "float16", "verdict": "unsupported", "counts": {}},
            {"op": "sin", "dtype": "float16", "verdict": "partial", "counts": {}},
        ],
    }
    doc.update(fields)
    return doc


def _write_discovery(results: Path, doc: Any, where: str = "discovery") -> Path:
    folder = results / where
    folder.mkdir(parents=True, exist_ok=True)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (folder / "discovery.json").write_text(text, encoding="utf-8")
    (folder / "discovery.md").write_text("# page\n", encoding="utf-8")
    return folder / "discovery.json"


def _section(text: str) -> str:
    start = text.index(TITLE)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _render(results: Path, syn) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    syn.write(results, syn.artifact())
    report = load_input(results)
    return render_markdown(report), render_html(report)


def test_rows_per_dtype_in_markdown_and_html(tmp_path, syn):
    """Each claimed or probed dtype gets its counts; the page and unclean ops are named."""
    _write_discovery(tmp_path, _doc())
    text, html = _render(tmp_path, syn)
    section = _section(text)
    assert "From `discovery/discovery.json` (a probe of every op)." in section
    assert "| `float32` | `True` | `True` | 3 | 2 | 0 | 1 |" in section
    assert "| `float16` | `True` | `(?!(?:cos\\|tan)$).*` | 4 | 1 | 3 | 0 |" in section
    assert "| `bfloat16` | `add\\|mul` | not probed | 0 | 0 | 0 | 0 |" in section
    assert "`int8`" not in section
    assert (
        "2 op(s) are not clean, in 3 (op, dtype) pair(s): each is listed in the "
        "discovery page `discovery/discovery.md`." in section
    )
    # after the counts by dtype and level, before the not-run reasons
    assert text.index("## Counts by dtype") < text.index(TITLE)
    assert text.index(TITLE) < text.index("## Not run, by reason")
    assert "Claimed vs discovered dtype support</h2>" in html
    assert "<td><code>(?!(?:cos|tan)$).*</code></td>" in html
    assert "<code>discovery/discovery.md</code>" in html


def test_whole_probe_first_and_others_counted(tmp_path, syn):
    """The whole probe's file is shown over subset probes', which are counted."""
    _write_discovery(tmp_path, _doc(), "discovery")
    sub = _doc(subset=True, dtypes=[_dtype("float64", True, True, works=["add"])])
    _write_discovery(tmp_path, sub, "discovery/selections/ops_add")
    section = _section(_render(tmp_path, syn)[0])
    assert "From `discovery/discovery.json` (a probe of every op); 1 more" in section
    assert "`float64`" not in section


def test_subset_probe_alone_is_shown(tmp_path, syn):
    """Without a whole probe, the first subset probe's file is shown."""
    sub = _doc(
        subset=True, dtypes=[_dtype("float64", True, True, works=["add"])], cells=[]
    )
    _write_discovery(tmp_path, sub, "discovery/selections/ops_add")
    section = _section(_render(tmp_path, syn)[0])
    assert (
        "From `discovery/selections/ops_add/discovery.json` (a probe of some ops)."
        in section
    )
    assert "| `float64` | `True` | `True` | 1 | 1 | 0 | 0 |" in section
    assert "Every probed op passed every sample in every probed dtype" in section


def test_subset_run_reads_its_results_root(tmp_path, syn):
    """A subset run's scorecard shows the root's discovery, by a path from its dir."""
    _write_discovery(tmp_path, _doc())
    run_dir = tmp_path / "selections" / "ops_add"
    run_dir.mkdir(parents=True)
    section = _section(_render(run_dir, syn)[0])
    assert "From `../../discovery/discovery.json`" in section
    assert "`../../discovery/discovery.md`" in section


def test_no_discovery_no_section(tmp_path, syn):
    """A results dir without discovery files has no such section."""
    text, html = _render(tmp_path, syn)
    assert "discovered" not in text and "discovered" not in html


def _bad_dtypes() -> list[Any]:
    return [
        [_dtype("<script>alert(1)</script>|x", True, True)],
        [_dtype("float32", 1, True)],
        [_dtype("float32", True, ["x"])],
        [{**_dtype("float32", True, True), "works": "add"}],
        [{**_dtype("float32", True, True), "works": [1]}],
        [{**_dtype("float32", True, True), "probed": "yes"}],
        [_dtype("float32", True, True), _dtype("float32", True, True)],
        ["float32"],
    ]


CRAFTED: list[tuple[str, Any, str]] = [
    *((f"dtypes{i}", _doc(dtypes=d), "dtypes") for i, d in enumerate(_bad_dtypes())),
    ("json", "{not json", "invalid JSON at line 1"),
    ("array", "[]", "not a JSON object"),
    ("format", _doc(format="other"), "not a torchcts-discovery file of version 1"),
    ("version", _doc(version="1"), "not a torchcts-discovery file of version 1"),
    ("no-dtypes", _doc(dtypes={"float32": {}}), "'dtypes' is not a list"),
    (
        "cells",
        _doc(cells=[{"op": "a", "dtype": "b", "verdict": ["x"]}]),
        "cells\\[0\\] lacks an op",
    ),
    ("subset", _doc(subset="no"), "'subset' is not true or false"),
    ("deep", "[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
]


@pytest.mark.parametrize(
    ("name", "doc", "problem"), CRAFTED, ids=[c[0] for c in CRAFTED]
)
def test_crafted_file_is_one_line_note(tmp_path, syn, name, doc, problem):
    """A damaged or crafted discovery.json is named in one line; the render goes on."""
    _write_discovery(tmp_path, doc)
    text, html = _render(tmp_path, syn)
    section = _section(text)
    body = section.removeprefix(TITLE).strip()
    assert "\n" not in body
    assert body.startswith(
        "The discovery file `discovery/discovery.json` is unreadable"
    )
    assert problem in body and body.endswith("no discovery is shown.")
    assert "<script>" not in text and "<script>" not in html
    assert str(tmp_path) not in text and str(tmp_path) not in html
    assert "## Not run, by reason" in text  # the scorecard went on


def test_huge_strings_are_bounded_and_escaped(tmp_path, syn):
    """A megabyte regex with markup and pipes is cut short and stays text."""
    regex = "<script>|" * 200_000
    _write_discovery(
        tmp_path, _doc(dtypes=[_dtype("float32", regex, regex, works=["add"])])
    )
    text, html = _render(tmp_path, syn)
    row = next(line for line in _section(text).splitlines() if "`float32`" in line)
    assert len(row) < 1_000 and "more characters" in row
    assert row.count(" | ") == 6  # seven cells: no pipe from the file split a cell
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_not_utf8_is_named(tmp_path, syn):
    """Bytes that are not UTF-8 text are a one-line problem, not a traceback."""
    path = _write_discovery(tmp_path, _doc())
    path.write_bytes(b"\xff\xfe{")
    assert "(not UTF-8 text)" in _section(_render(tmp_path, syn)[0])


def test_same_input_same_bytes(tmp_path, syn):
    """Rendering twice gives identical markdown and HTML."""
    _write_discovery(tmp_path, _doc())
    assert _render(tmp_path, syn) == _render(tmp_path, syn)
