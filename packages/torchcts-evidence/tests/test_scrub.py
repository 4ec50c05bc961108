"""Host identity never leaves the machine: scrubbing rules and a planted identity."""

from __future__ import annotations

import getpass
import socket
import zipfile
from pathlib import Path

import pytest
from evidence_builders import make_project
from torchcts_evidence import HostIdentity, build_archive, find_identity, scrub_text

HOST = "planted-host-q7x"
USER = "planted-user-q7x"
IDENT = HostIdentity(
    host_names=(HOST,), user_names=(USER,), homes=(f"/home/{USER}",), roots=("/w/p",)
)


def test_project_root_becomes_relative() -> None:
    """A path under the project root becomes relative; a sibling is not confused."""
    assert (
        scrub_text("--manifest /w/p/manifests/x.py", IDENT)
        == "--manifest manifests/x.py"
    )
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
        "&lt;site-packages&gt;/torch/x.py"
    )
    assert scrub_text(text, IDENT) == text


def test_names_are_masked_only_as_whole_tokens() -> None:
    """A name is masked between non-alphanumerics but never inside a longer word."""
    ident = HostIdentity(user_names=("alice",))
    text = "alice@box /tmp/pytest-of-alice malice alice2 ALICE_x"
    assert scrub_text(text, ident) == (
        "<user>@box <path>/pytest-of-<user> malice alice2 <user>_x"
    )


def test_current_identity_ignores_tiny_and_generic_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Host 'vm' and user 'torch' identify nobody and would corrupt artifacts."""
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    monkeypatch.setattr(getpass, "getuser", lambda: "torch")
    for var in ("USER", "USERNAME", "LOGNAME"):
        monkeypatch.delenv(var, raising=False)
    ident = HostIdentity.current()
    assert ident.host_names == () and ident.user_names == ()
    assert scrub_text('{"torch_version": "2.13"} on vm', ident) == (
        '{"torch_version": "2.13"} on vm'
    )


def test_find_identity_reports_what_leaks() -> None:
    """find_identity names each leak and is empty on scrubbed text."""
    text = f"{HOST} /etc/{USER}"
    assert len(find_identity(text, IDENT)) == 3
    assert find_identity(scrub_text(text, IDENT), IDENT) == []


def test_planted_identity_never_reaches_any_archive_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host, user and home planted in commands, messages and logs are not archived."""
    home = tmp_path / "home" / USER
    home.mkdir(parents=True)
    monkeypatch.setattr(socket, "gethostname", lambda: HOST)
    monkeypatch.setattr(getpass, "getuser", lambda: USER)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USER", USER)
    message = f"failed on {HOST} reading {home}/data/x.pt and /var/tmp/{USER}/y"
    project = make_project(
        home / "proj",
        command=f"torchcts-run --manifest {home}/proj/manifests/simdev.py",
        message=message,
    )
    built = build_archive(
        project.results, out_dir=tmp_path / "out", project_root=project.root
    )
    raw = built.path.read_bytes()
    with zipfile.ZipFile(built.path) as zf:
        blobs = [
            raw,
            *(zf.read(n) for n in zf.namelist()),
            *map(str.encode, zf.namelist()),
        ]
    for secret in (HOST, USER, str(home), str(tmp_path)):
        for blob in blobs:
            assert secret.encode() not in blob
            assert secret.lower().encode() not in blob.lower()
    assert built.scrubbed  # the planted text was really there and was removed
