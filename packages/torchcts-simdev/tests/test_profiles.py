"""Profiles load from names, paths, dicts and the environment; bad ones fail clearly."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torchcts_simdev
from torchcts_simdev import ProfileError, load_profile


def test_shipped_profiles_load() -> None:
    """clean has no rules; demo has at least one rule of every status-making kind."""
    assert load_profile("clean").rules == ()
    demo = load_profile("demo")
    kinds = {rule.fault for rule in demo.rules}
    assert {"segfault", "abort", "hang", "not_implemented", "runtime_error"} <= kinds
    assert {"wrong_values", "wrong_dtype", "wrong_shape", "drop_inplace"} <= kinds


def test_demo_rules_name_real_overloads_and_bound_crashes() -> None:
    """Every demo glob matches a registered aten overload; crash rules are narrowed."""
    names = torch._C._dispatch_get_all_op_names()
    for rule in load_profile("demo").rules:
        for glob in rule.ops:
            assert any(fnmatch.fnmatchcase(n, glob) for n in names), glob
        if rule.fault in torchcts_simdev.CRASH_KINDS:
            assert rule.dtypes and rule.ndim is not None, rule


def test_profile_from_path(tmp_path: Path) -> None:
    """A JSON file path loads, and its name defaults to the file stem."""
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"rules": [{"op": "aten::sin.out", "fault": "abort"}]}))
    profile = load_profile(str(path))
    assert profile.name == "mine" and profile.rules[0].fault == "abort"


BAD = [
    ("[1, 2]", "a profile must be a JSON object"),
    ('{"rules": [], "extra": 1}', "unknown key 'extra'"),
    ('{"rules": {}}', "'rules' must be a list"),
    ('{"rules": [7]}', "rules[0]: a rule must be a JSON object"),
    ('{"rules": [{"fault": "abort"}]}', "rules[0]: missing required key 'op'"),
    ('{"rules": [{"op": "aten::sin"}]}', "rules[0]: missing required key 'fault'"),
    ('{"rules": [{"op": "sin", "fault": "abort"}]}', "rules[0].op: 'sin' is not"),
    ('{"rules": [{"op": "aten.sin.default", "fault": "abort"}]}', "rules[0].op:"),
    ('{"rules": [{"op": [], "fault": "abort"}]}', "rules[0].op: must be a string"),
    ('{"rules": [{"op": "aten::sin", "fault": "segv"}]}', "unknown fault 'segv'"),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "dtype": "float"}]}',
        "rules[0].dtype: unknown dtype 'float'",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "ndim": -1}]}',
        "rules[0].ndim: must be a non-negative int",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "shape": [2, "x"]}]}',
        "rules[0].shape: must be a list",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "magnitude": "small"}]}',
        "rules[0].magnitude: only applies to fault 'wrong_values'",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "wrong_values", "magnitude": "huge"}]}',
        "rules[0].magnitude: must be 'small' or 'large'",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "memory_blowup", "max_mb": 0}]}',
        "rules[0].max_mb: must be a positive int",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "inplace": "yes"}]}',
        "rules[0].inplace: must be true or false",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "expanded": 1}]}',
        "rules[0].expanded: must be true or false",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort"}, {"op": "x", "fault": "abort"}]}',
        "rules[1].op",
    ),
    ('{"rules": [}', "not valid JSON (line 1 column 12"),
    (
        '{"rules": [{"op": "aten::x*", "fault": "abort", "own_kernel": true}]}',
        "rules[0].own_kernel: op must name overloads exactly",
    ),
    (
        '{"rules": [{"op": "aten::sin", "fault": "abort", "own_kernel": 1}]}',
        "rules[0].own_kernel: must be true or false",
    ),
]


@pytest.mark.parametrize(("text", "problem"), BAD)
def test_invalid_profiles_name_file_rule_and_key(
    tmp_path: Path, text: str, problem: str
) -> None:
    """Each defect raises ProfileError naming the file, the rule index and the key."""
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert problem in message
    assert "Traceback" not in message


def test_missing_profile_lists_shipped_names() -> None:
    """An unknown name that is not a file says which names are shipped."""
    with pytest.raises(ProfileError, match="shipped: clean, demo"):
        load_profile("nosuch")


def test_undecodable_file_is_a_clear_error(tmp_path: Path) -> None:
    """A profile that is not UTF-8 is reported, not a UnicodeDecodeError."""
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile(str(path))


def test_torchcts_configure_reads_fault_profile() -> None:
    """The runner hook activates options['fault_profile'] and rejects unknown keys."""
    torchcts_simdev.torchcts_configure({"fault_profile": "demo"})
    assert torchcts_simdev.active_profile().name == "demo"
    assert "fault profile 'demo'" in torchcts_simdev.describe()
    torchcts_simdev.torchcts_configure({})
    assert torchcts_simdev.active_profile().name == "clean"
    with pytest.raises(ProfileError, match="unknown simdev option 'profile'"):
        torchcts_simdev.torchcts_configure({"profile": "demo"})
    with pytest.raises(ProfileError, match="fault_profile'] must be"):
        torchcts_simdev.torchcts_configure({"fault_profile": 3})


def test_env_var_wins_over_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    """TORCHCTS_SIMDEV_PROFILE overrides the configured profile, which is still checked."""
    monkeypatch.setenv(torchcts_simdev.ENV_VAR, "clean")
    assert torchcts_simdev.configure("demo").name == "clean"
    with pytest.raises(ProfileError):
        torchcts_simdev.configure("nosuch")


def test_fresh_process_registers_device_and_applies_env_profile(tmp_path: Path) -> None:
    """In a fresh process the import alone registers simdev and loads the env profile."""
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"rules": [{"op": "aten::sin.out", "fault": "abort"}]}))
    code = (
        "import torch, torchcts_simdev; print(torchcts_simdev.active_profile().name); "
        "print(torch.ones(2, device='simdev').device); "
        "torchcts_simdev.torchcts_configure({'fault_profile': 'clean'}); "
        "print(torchcts_simdev.active_profile().name)"
    )
    env = dict(os.environ, TORCHCTS_SIMDEV_PROFILE=str(path))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.stdout.split() == ["env", "simdev:0", "env"], out.stderr


def test_own_kernel_lets_a_fault_reach_an_overload_with_a_generic_kernel() -> None:
    """hann_window.out has PyTorch's generic kernel, which serves simdev and never
    reaches a fault; an own_kernel rule registers simdev's kernel for it while the
    profile is active (the fault then applies), and the next profile drops it. A
    rule naming an overload simdev already serves is refused."""
    key = "PrivateUse1"
    name = "aten::hann_window.out"
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, key)

    def window() -> torch.Tensor:
        out = torch.empty(0, device="simdev")
        return torch.ops.aten.hann_window.out(5, out=out).cpu()

    rule = {"op": name, "fault": "wrong_values", "magnitude": "large"}
    expected = torch.hann_window(5)
    try:
        torchcts_simdev.configure({"rules": [rule]})
        assert torch.equal(window(), expected)  # the generic kernel: no fault
        torchcts_simdev.configure({"rules": [{**rule, "own_kernel": True}]})
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
        assert not torch.allclose(window(), expected)
        torchcts_simdev.configure("clean")
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
        assert torch.equal(window(), expected)
        served = {"op": "aten::sin.out", "fault": "abort", "own_kernel": True}
        with pytest.raises(ProfileError, match="already has a simdev kernel"):
            torchcts_simdev.configure({"rules": [served]})
    finally:
        torchcts_simdev.configure("clean")
