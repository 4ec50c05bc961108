"""Host identity never reaches an archive byte (the rules are tested in the schema)."""

from __future__ import annotations

import getpass
import re
import socket
import zipfile
from pathlib import Path

import pytest
from evidence_builders import RUN_KEY, make_project
from torchcts_evidence import build_archive, verify_archive
from torchcts_schema import HostIdentity

HOST = "planted-host-q7x"
USER = "planted-user-q7x"
IDENT = HostIdentity(
    host_names=(HOST,), user_names=(USER,), homes=(f"/home/{USER}",), roots=("/w/p",)
)


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
    # the scrubbed artifacts carry the digest of what they now hold
    assert verify_archive(built.path).problems == []


def test_a_two_letter_host_name_never_reaches_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host 'ab' in messages is masked in the .md, .html, runlog and journal members."""
    monkeypatch.setattr(socket, "gethostname", lambda: "ab")
    monkeypatch.setattr(getpass, "getuser", lambda: USER)
    monkeypatch.setenv("USER", USER)
    project = make_project(tmp_path / "p", message="ab: device fault on ab")
    (project.results / f"{RUN_KEY}.html").write_text(
        "<td>ab: device fault on ab</td>\n", encoding="utf-8"
    )
    built = build_archive(
        project.results, out_dir=tmp_path / "out", project_root=project.root
    )
    token = re.compile(rb"(?<![A-Za-z0-9])ab(?![A-Za-z0-9])")
    with zipfile.ZipFile(built.path) as zf:
        for name in zf.namelist():
            assert not token.search(zf.read(name)), name
        html = zf.read(f"results/{RUN_KEY}.html").decode()
        journal = zf.read(f"results/{RUN_KEY}_journal.jsonl").decode()
    assert "<host>: device fault on <host>" in html
    assert "<host>: device fault on <host>" in journal
    assert f"results/{RUN_KEY}.md" in built.scrubbed
