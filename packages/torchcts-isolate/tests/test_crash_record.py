"""Crash records: one scrubbed, atomic file per crashed case, shaped as the contract says."""

from __future__ import annotations

import getpass
import json
import os
import socket
from pathlib import Path

import pytest
from torchcts_isolate import (
    crash_record_path,
    read_crash_record,
    safe_case_name,
    write_crash_record,
)
from torchcts_schema import ArtifactError, CrashInfo, CrashKind

KEY = "simdev_x86-64-2cpu-24gb"
CASE = "opinfo/add/forward/float32/0"


def payload(**extra: object) -> dict[str, object]:
    """A crash payload full of this host's identity."""
    home = os.path.expanduser("~")
    host = socket.gethostname()
    base: dict[str, object] = {
        "case_id": CASE,
        "crash": CrashInfo(CrashKind.SIGNAL, "SIGSEGV", None, "killed").to_dict(),
        "runlog_tail": [f"00000001 t gw0 torchcts::{CASE}"],
        "stderr_tail": f"Fatal Python error at {home}/venv/lib/x.py on {host}\n",
        "traceback": f'  File "{os.getcwd()}/packages/a.py", line 3 in f\n',
        "environment": {"os": "Linux", "torch_version": "2.13.0", "device": "simdev"},
        "repro_command": ["torchcts-run", "--manifest", f"{os.getcwd()}/m.py"],
        "repro_script": "import torch\nprint('/opt/secret/place/file.py')\n",
    }
    base.update(extra)
    return base


def test_record_has_contract_keys_and_loads_back(tmp_path: Path) -> None:
    """Every payload key is written, missing ones as null, and it reads back."""
    path = write_crash_record(tmp_path, KEY, payload())
    assert path == tmp_path / f"{KEY}_crashes" / "opinfo~add~forward~float32~0.json"
    data = read_crash_record(path)
    for key in ("case_id", "node_id", "run_key", "crash", "runlog_tail",
                "stderr_tail", "traceback", "environment", "repro_command",
                "repro_script"):  # fmt: skip
        assert key in data
    assert data["node_id"] == "torchcts::" + CASE and data["run_key"] == KEY
    assert data["crash"]["signal"] == "SIGSEGV"
    assert data["environment"]["hardware_key"] is None
    assert data["environment"]["torch_version"] == "2.13.0"


def test_host_identity_is_scrubbed(tmp_path: Path) -> None:
    """Home, working directory, host and absolute paths never reach the file."""
    text = write_crash_record(tmp_path, KEY, payload()).read_text(encoding="utf-8")
    assert os.path.expanduser("~") + "/" not in text
    assert os.getcwd() + "/" not in text
    assert "/opt/secret/place" not in text and "<path>/file.py" in text
    host = socket.gethostname()
    if len(host) >= 4:
        assert host not in text
    user = getpass.getuser()
    if len(user) >= 4 and user not in ("root", "runner"):
        assert user not in text
    data = json.loads(text)
    assert data["repro_command"][-1] == "m.py"
    assert data["case_id"] == CASE


def test_minimal_payload_gets_defaults(tmp_path: Path) -> None:
    """Only case_id and crash are required; lists default to [] and others to null."""
    crash = CrashInfo(CrashKind.HANG, detail="stuck")
    data = read_crash_record(
        write_crash_record(tmp_path, KEY, {"case_id": CASE, "crash": crash})
    )
    assert data["runlog_tail"] == [] and data["repro_command"] == []
    assert data["traceback"] is None and data["repro_script"] is None


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ({"case_id": ""}, "case_id"),
        ({"crash": {"kind": "exploded"}}, "crash.kind"),
        ({"crash": "SIGSEGV"}, "'crash' must be a dict"),
        ({"runlog_tail": "line"}, "'runlog_tail' must be a list"),
        ({"environment": []}, "'environment' must be a dict"),
    ],
)
def test_bad_payload_is_refused(
    tmp_path: Path, bad: dict[str, object], needle: str
) -> None:
    """A malformed payload raises ArtifactError naming the key; nothing is written."""
    with pytest.raises(ArtifactError, match=needle):
        write_crash_record(tmp_path, KEY, payload(**bad))
    assert not (tmp_path / f"{KEY}_crashes").exists() or not any(
        (tmp_path / f"{KEY}_crashes").iterdir()
    )


def test_safe_names_are_distinct_and_plain() -> None:
    """Case ids that differ only in separators or odd characters keep apart."""
    ids = ["a/b_c/d", "a/b/c_d", "a_b/c/d", "a/b c/d", "a/b%20c/d", "../x/y"]
    names = [safe_case_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert all("/" not in n and " " not in n and not n.startswith(".") for n in names)
    long_a, long_b = "s/" + "x" * 400 + "a", "s/" + "x" * 400 + "b"
    assert safe_case_name(long_a) != safe_case_name(long_b)
    assert len(safe_case_name(long_a)) <= 180


def test_second_crash_replaces_first(tmp_path: Path) -> None:
    """The record describes the latest crash of that case in this results dir."""
    write_crash_record(tmp_path, KEY, payload())
    write_crash_record(tmp_path, KEY, payload(crash={"kind": "timeout"}))
    data = read_crash_record(crash_record_path(tmp_path, KEY, CASE))
    assert data["crash"]["kind"] == "timeout"
    assert len(list((tmp_path / f"{KEY}_crashes").iterdir())) == 1


def test_unreadable_record_names_file(tmp_path: Path) -> None:
    """read_crash_record turns bad JSON into one ArtifactError with the path."""
    path = tmp_path / "bad.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"bad\.json"):
        read_crash_record(path)


def test_non_json_values_become_scrubbed_text(tmp_path: Path) -> None:
    """A Path or other non-JSON value is written as (scrubbed) text, not a crash."""
    extra = {"manifest_path": Path(os.getcwd()) / "manifests" / "simdev.py"}
    data = read_crash_record(write_crash_record(tmp_path, KEY, payload(**extra)))
    assert data["manifest_path"] == "manifests/simdev.py"
