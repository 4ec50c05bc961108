"""Hostile artifact content: markup, control characters, huge and odd text, bad types."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from torchcts_report import load_input, render_html, render_junit, render_markdown
from torchcts_schema import ArtifactError, CrashInfo, CrashKind, Status, artifact_digest

EVIL = (
    "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&amp;"
    "| pipe | ```fence``` [link](javascript:alert(3)) ]]> <!-- -->"
)
CONTROL = "nul\x00 bell\x07 esc\x1b[31m del\x7f c1\x85 lone\ud800 noncharacter\uffff"


class _Tags(HTMLParser):
    """Collects the tags and attributes an HTML document really contains."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append((tag, attrs))


def _hostile_artifact(syn):  # type: ignore[no-untyped-def]
    r = syn.record
    return syn.artifact(
        [
            r(
                "add",
                "float32",
                Status.ERROR,
                exception_type=EVIL,
                exception_message=EVIL + "\n" + CONTROL,
            ),
            r("mul", "float32", Status.FAILED, mismatch=CONTROL + EVIL),
            r(
                "sum",
                "float32",
                Status.CRASHED,
                crash=CrashInfo(CrashKind.SIGNAL, signal=EVIL, detail=CONTROL),
            ),
            r("div", "float32", Status.SKIPPED, detail=EVIL),
            r(
                "sin",
                "float32",
                Status.UNSUPPORTED,
                exception_type="NotImplementedError",
                exception_message="x" * 2_000_000,
            ),
            r(
                "cos",
                "float32",
                Status.FAILED,
                mismatch="ünïcödé ✓ 数値 \u202eevil\u202c 😀",
                extra={"capability": EVIL},
            ),
        ],
        backend=EVIL,
        command=EVIL + CONTROL,
        hardware_key=CONTROL,
        probes={EVIL: 1},
    )


def _write_hostile_evidence(tmp_path: Path) -> None:
    crashes = tmp_path / "simdev_x86-64-2cpu_crashes"
    crashes.mkdir()
    (crashes / "sum.json").write_text(
        json.dumps(
            {
                "case_id": "opinfo/sum/forward/float32/0",
                "runlog_tail": [EVIL, CONTROL],
                "stderr_tail": EVIL + "\n```\n" + CONTROL + "\n/home/alice/secret.py",
                "traceback": "y\n" * 100_000,
                "repro_command": ["torchcts-run", EVIL],
                "crash": {"kind": EVIL},
            }
        )
    )
    (tmp_path / "simdev_x86-64-2cpu_harness_probe_failures_1.jsonl").write_text(
        json.dumps({"kind": EVIL, "probe": CONTROL, "status": "failed", "note": EVIL})
        + "\n"
    )


@pytest.fixture
def hostile(tmp_path, syn):  # type: ignore[no-untyped-def]
    """A results dir whose artifact and evidence are full of hostile strings."""
    syn.write_ascii(tmp_path, _hostile_artifact(syn))
    _write_hostile_evidence(tmp_path)
    return load_input(tmp_path)


def test_html_injection_is_inert(hostile):
    """Markup from artifacts never becomes tags or attributes in the HTML."""
    html = render_html(hostile)
    parser = _Tags()
    parser.feed(html)
    tags = {tag for tag, _ in parser.tags}
    assert "script" not in tags and "img" not in tags
    for tag, attrs in parser.tags:
        for name, value in attrs:
            assert not name.startswith("on")
            if tag == "a":  # only the grid's links to the page's own sections
                assert name == "href" and re.fullmatch(r"#[a-z0-9-]+", value or "")
    assert "&lt;script&gt;" in html


def test_html_is_self_contained(hostile):
    """The HTML loads nothing: no scripts, links, images or external URLs, and a CSP."""
    html = render_html(hostile)
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag not in ("script", "link", "img", "iframe", "object")
        for name, value in attrs:
            assert name != "src"
            if name == "href":  # a fragment of this page loads nothing
                assert (value or "").startswith("#")
    assert "default-src 'none'" in html
    assert "<style>" in html


def test_junit_is_valid_xml_with_control_characters(hostile):
    """The JUnit XML parses despite control characters, markup and surrogates."""
    root = ET.fromstring(render_junit(hostile).encode("utf-8"))
    error = root.find(".//testcase[@name='opinfo/add/forward/float32/0']/error")
    assert error is not None
    assert "<script>" in error.get("type", "")  # escaped on the way in, text again
    assert "\x00" not in (error.text or "")


def test_markdown_cannot_break_out(hostile):
    """Artifact text cannot open raw HTML, links or fences in the markdown."""
    text = render_markdown(hostile)
    # GitHub renders markdown with raw HTML allowed; the markup must still stay text
    permissive = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    parser = _Tags()
    parser.feed(permissive)
    tags = {tag for tag, _ in parser.tags}
    assert not tags & {"script", "img", "a", "iframe"}
    for char in ("\x00", "\x07", "\x1b", "\x7f", "\x85", "\ufffe", "\uffff"):
        assert char not in text
    assert "\u202e" not in text
    assert "<U+202E>" not in text or "\\<U+202E\\>" in text


def test_surrogates_do_not_break_writing(hostile, tmp_path):
    """Every output encodes as UTF-8 even when the artifact held lone surrogates."""
    for render in (render_markdown, render_html, render_junit):
        render(hostile).encode("utf-8")


def test_huge_messages_are_bounded(hostile):
    """A 2 MB exception message and a 100,000-line traceback stay bounded in reports."""
    text = render_markdown(hostile)
    assert len(text) < 200_000
    assert "more characters)" in text
    assert "[99968 other line(s) left out]" in text  # 100,000 - 32 shown
    assert len(render_junit(hostile)) < 200_000


def test_home_directories_are_hidden(hostile):
    """A home directory in stderr (host identity) does not reach the report."""
    assert "/home/alice" not in render_markdown(hostile)
    assert "~/secret.py" in render_markdown(hostile)


def test_unicode_survives(hostile):
    """Ordinary non-ASCII text is kept as it is."""
    assert "ünïcödé ✓ 数値" in render_markdown(hostile)
    assert "😀" in render_html(hostile)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("op", 5, "op has the wrong type"),
        ("level", "deep", "level has the wrong type"),
        ("duration_s", "slow", "duration_s has the wrong type"),
        ("level", True, "level has the wrong type"),
        ("extra", 5, "malformed"),
    ],
)
def test_wrong_types_are_one_clear_error(tmp_path, syn, field, value, named):
    """A field of the wrong type is an ArtifactError naming the file, case and field."""
    art = syn.artifact([syn.record()])
    history = syn.write(tmp_path, art)
    data = json.loads(history.read_text())
    if data["encoding"] == "compact":
        data["results"]["columns"][field] = {"codec": "const", "value": value}
    else:
        data["results"][0][field] = value
    data.pop("digest", None)
    data["digest"] = artifact_digest(data)  # a crafted file can carry a valid digest
    history.write_text(json.dumps(data))
    with pytest.raises(ArtifactError) as info:
        load_input(tmp_path)
    assert named in str(info.value)
    assert history.name in str(info.value)


def test_wrong_metadata_type_is_named(tmp_path, syn):
    """A metadata field of the wrong type names the field."""
    history = syn.write(tmp_path, syn.artifact([syn.record()]))
    data = json.loads(history.read_text())
    data["metadata"]["completed_normally"] = "yes"
    history.write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="completed_normally has the wrong type"):
        load_input(tmp_path)


def test_hostile_run_key_cannot_escape_the_directory(tmp_path, syn):
    """A run key with path parts is refused before any file name is built from it."""
    art = syn.artifact([syn.record()], run_key="../../evil")
    history = tmp_path / "x_history" / "a.json"
    history.parent.mkdir()
    from torchcts_schema import encode_artifact

    history.write_text(encode_artifact(art))
    with pytest.raises(ArtifactError, match="not a plain token"):
        load_input(history)
