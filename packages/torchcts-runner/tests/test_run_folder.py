"""Where a run writes, and which environment a resume must find unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchcts_runner.device_environment import run_environment
from torchcts_runner.run_folder import subset_folder


def _folder(**kw: object) -> str | None:
    base: dict[str, object] = dict(
        node_ids=(), op_globs=(), dtypes=(), suites=(), keyword="", markexpr=""
    )
    base.update(kw)
    return subset_folder(**base)  # type: ignore[arg-type]


def test_whole_manifest_runs_have_no_subset_folder() -> None:
    """No node id, op, dtype, suite, -k or -m: the run writes results/ itself."""
    assert _folder() is None


def test_subset_folders_are_readable_stable_and_path_safe() -> None:
    """The same selection lands in the same folder; unsafe text never makes a path."""
    assert _folder(op_globs=("add", "mul")) == "selections/op-add+mul"
    assert _folder(node_ids=("torchcts::opinfo/abs/forward/float32/0",)) == (
        _folder(node_ids=("torchcts::opinfo/abs/forward/float32/0",))
    )
    odd = _folder(keyword="a and not ../../etc")
    assert odd is not None and ".." not in odd and odd.count("/") == 1
    long = _folder(op_globs=tuple(f"op{i}" for i in range(40)))
    assert long is not None and len(long.split("/")[1]) <= 60


def test_environment_records_backend_and_pytorch_settings_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """TORCHCTS_<DEVICE>_* and PYTORCH_* are recorded (a file by name and digest);
    a harness's own variables are not, so they never block a resume."""
    profile = tmp_path / "faults.json"
    profile.write_text("{}")
    monkeypatch.setenv("TORCHCTS_SIMDEV_PROFILE", str(profile))
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "0")
    monkeypatch.setenv("TORCHCTS_SOAK_TAG", "123")
    env = run_environment("simdev")
    assert env["PYTORCH_ENABLE_MPS_FALLBACK"] == "0"
    assert env["TORCHCTS_SIMDEV_PROFILE"].startswith("faults.json@sha256:")
    assert str(tmp_path) not in str(env)
    assert "TORCHCTS_SOAK_TAG" not in env
    profile.write_text('{"rules": []}')
    assert run_environment("simdev") != env  # an edited profile is another run


def test_usable_path_is_never_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A manifest path recorded for rerun commands works where the run started and
    never holds the host's absolute path."""
    from torchcts_runner.metadata import usable_path

    work = tmp_path / "work"
    (work / "manifests").mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert usable_path("manifests/simdev.py") == "manifests/simdev.py"
    assert usable_path(str(work / "manifests" / "simdev.py")) == "manifests/simdev.py"
    assert usable_path(str(tmp_path / "home" / "m.py")) == "~/m.py"
    assert usable_path(str(tmp_path / "elsewhere" / "m.py")) == "../elsewhere/m.py"
