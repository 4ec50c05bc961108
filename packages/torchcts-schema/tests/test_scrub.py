"""The one host-identity scrubber: what is masked, what is left alone, and the check."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torchcts_schema import (
    HostIdentity,
    find_identity,
    scrub_argv,
    scrub_bytes,
    scrub_text,
    scrub_value,
)

HOST = "planted-host-q7x"
USER = "planted-user-q7x"
IDENT = HostIdentity(
    host_names=(HOST,), user_names=(USER,), homes=(f"/home/{USER}",), roots=("/w/p",)
)
SHORT = HostIdentity(host_names=("ab",), user_names=("zq",))
COMMON = HostIdentity(host_names=("vm",), user_names=("eq",))


def test_project_root_becomes_relative() -> None:
    """A path under the project root becomes relative; a sibling is not confused."""
    assert (
        scrub_text("--manifest /w/p/manifests/x.py", IDENT)
        == "--manifest manifests/x.py"
    )
    assert scrub_text("cd /w/p", IDENT) == "cd ."
    assert scrub_text("/w/p2/y", IDENT) == "<path>/y"


def test_home_becomes_tilde_and_names_are_masked() -> None:
    """Home is shown as ~; host and user names are masked wherever they occur."""
    text = f"/home/{USER}/x on {HOST.upper()}.lan by {USER}"
    assert scrub_text(text, IDENT) == "~/x on <host>.lan by <user>"


def test_other_absolute_paths_keep_only_their_file_name() -> None:
    """Absolute paths keep the file name; site-packages keeps the package path."""
    text = 'File "/opt/venv/lib/python3.11/site-packages/torch/_ops.py", /srv/a/b.json'
    assert scrub_text(text, IDENT) == (
        'File "<site-packages>/torch/_ops.py", <path>/b.json'
    )
    assert scrub_text(r"C:\\Users\\x\\run.json", IDENT) == "<path>"


def test_ordinary_slashes_are_left_alone() -> None:
    """Case ids, ratios, URLs, closing tags and escaped masks are not paths."""
    text = (
        "opinfo/add/forward/float32/0 3/4 https://github.com/a/b </td> a / b "
        "&lt;site-packages&gt;/torch/x.py <path>/x.py"
    )
    assert scrub_text(text, IDENT) == text


def test_names_are_masked_only_as_whole_tokens() -> None:
    """A name is masked between non-alphanumerics but never inside a longer word."""
    ident = HostIdentity(user_names=("alice",))
    text = "alice@box /tmp/pytest-of-alice malice alice2 ALICE_x"
    assert scrub_text(text, ident) == (
        "<user>@box <path>/pytest-of-<user> malice alice2 <user>_x"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ab: device fault", "<host>: device fault"),
        ("user@ab", "user@<host>"),
        ("failed on ab after zq logged in", "failed on <host> after <user> logged in"),
        ("abc tab ab2 0xab", "abc tab ab2 0xab"),
    ],
)
def test_a_two_letter_name_is_masked_as_a_word(text: str, expected: str) -> None:
    """A 2-letter host or user name is masked as a whole word, not inside others."""
    assert scrub_text(text, SHORT) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("eq@vm:22", "<user>@<host>:22"),
        ("vm: device fault", "<host>: device fault"),
        ("host vm, hostname=vm", "host <host>, hostname=<host>"),
        (
            '{"hostname": "vm", "user": "eq"}',
            '{"hostname": "<host>", "user": "<user>"}',
        ),
        (r"\\srv\Users\eq\x", r"\\srv\Users\<user>\x"),
        ("/tmp/vm", "<path>/<host>"),
    ],
)
def test_a_common_word_name_is_masked_where_it_names_a_host_or_user(
    text: str, expected: str
) -> None:
    """Names that are common words are masked in user@host, host:port, host= ..."""
    assert scrub_text(text, COMMON) == expected


def test_a_common_word_name_leaves_ordinary_text_alone() -> None:
    """Host 'vm' and user 'eq' do not wreck case ids, JSON keys or prose."""
    text = (
        '{"case_id": "opinfo/eq/forward/float32/0", "op": "eq"} the vm ran eq(a, b) '
        "<host> eq"
    )
    assert scrub_text(text, COMMON) == text
    assert find_identity(text, COMMON) == []


def test_mask_words_and_localhost_are_never_names() -> None:
    """A host called 'localhost' or a user called 'user' is not a secret to mask."""
    ident = HostIdentity(host_names=("localhost", "host"), user_names=("user",))
    text = "user@localhost:8080 <host> <user> <path>/x"
    assert scrub_text(text, ident) == text
    assert find_identity(text, ident) == []


def test_current_identity_reads_host_user_and_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """current() keeps short names (full and first label) and resolves the roots."""
    monkeypatch.setattr(socket, "gethostname", lambda: "ab.example.org")
    monkeypatch.setattr(getpass, "getuser", lambda: "torch")
    monkeypatch.setenv("HOME", "/home/torch/")
    for var in ("USER", "USERNAME", "LOGNAME", "USERPROFILE"):
        monkeypatch.delenv(var, raising=False)
    ident = HostIdentity.current(roots=(tmp_path / "a" / ".." / "b",))
    assert ident.host_names == ("ab.example.org", "ab")
    assert ident.user_names == ("torch",)
    assert "/home/torch" in ident.homes
    assert ident.roots == (str((tmp_path / "b").resolve()),)
    assert scrub_text('{"torch_version": "2.13"} ab: x', ident) == (
        '{"torch_version": "2.13"} <host>: x'
    )


def test_find_identity_names_each_leak_and_is_empty_after_scrubbing() -> None:
    """find_identity names host, home and path leaks, and nothing on scrubbed text."""
    text = f"{HOST} /etc/{USER} /home/{USER}/x"
    found = find_identity(text, IDENT)
    assert f"name {HOST!r}" in found and f"name {USER!r}" in found
    assert f"home '/home/{USER}'" in found
    assert "absolute path '/etc/" + USER + "'" in found
    assert find_identity(scrub_text(text, IDENT), IDENT) == []


def test_scrub_value_scrubs_every_string_and_key() -> None:
    """Nested dicts, lists and tuples are scrubbed, keys included; others untouched."""
    value = {HOST: [f"on {HOST}", ("/w/p/x",)], "n": 3, "ok": None}
    assert scrub_value(value, IDENT) == {
        "<host>": ["on <host>", ["x"]],
        "n": 3,
        "ok": None,
    }


def test_scrub_bytes_and_argv() -> None:
    """Bytes keep undecodable bytes; argv is scrubbed argument by argument."""
    assert scrub_bytes(b"\xff " + HOST.encode(), IDENT) == b"\xff <host>"
    assert scrub_argv(["run", "/w/p/m.py", USER], IDENT) == ["run", "m.py", "<user>"]


FRAGMENTS = [
    "ab", "vm", "eq", "zq", "@", ":", ":22", ": ", " ", "/", "\\", "host ", "user=",
    "/home/", "/w/p", "/tmp/", "C:\\", "<path>/", "<host>", '"', "x", "opinfo/eq/0",
    "site-packages/t.py", HOST, "\n",
]  # fmt: skip
MIXED = HostIdentity(
    host_names=("ab", "vm", HOST), user_names=("eq", "zq"), homes=("/home/zq",),
    roots=("/w/p",),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
@example("<path>//w/p/w/p")  # removing a root joined the rest into another root
@example("/home/site-packages/t.py@/home/")  # the path mask left a second path
def test_find_identity_finds_exactly_what_scrub_text_replaces(text: str) -> None:
    """find_identity is empty exactly when scrub_text changes nothing, and after it."""
    scrubbed = scrub_text(text, MIXED)
    assert (find_identity(text, MIXED) == []) == (scrubbed == text)
    assert find_identity(scrubbed, MIXED) == []
