"""check-manifest, init templates and show-skips from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from torchcts_cases.cli import main
from torchcts_cases.templates import TEMPLATES

REPO = Path(__file__).resolve().parents[3]


def _check(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    path = tmp_path / "manifest.py"
    path.write_text(text, encoding="utf-8")
    code = main(["check-manifest", str(path)])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('DEVICE = "cpu"\nDTYPE = {"float32": True}\n', "unknown key DTYPE"),
        ('DEVICE = "cpu"\nCAPABILITIES = ["forward", "telepathy"]\n', "unknown capability 'telepathy'"),
        ('DEVICE = "cpu"\nDTYPES = {"float33": True}\n', "unknown dtype 'float33'"),
        ('DEVICE = "cpu"\nDTYPES = {"float32": "add|(mul"}\n', "invalid regex"),
        ('DEVICE = "cpu"\nTOLERANCES = {"dtypes": {"float32": {"atol": -1}}}\n', "TOLERANCES.dtypes['float32'].atol"),
        ('DEVICE = "cpu"\nTOLERANCES = {"ops": {"add": {"float32": {"tol": 1}}}}\n', "TOLERANCES.ops['add']['float32']"),
        ('DEVICE = "cpu"\nOPS = {"include": ["ad"]}\n', "unknown op 'ad' (closest: "),
        ('DEVICE = "cpu"\nOPS = {"exclude": {"softmaxx": "why"}}\n', "closest: softmax"),
        ('DEVICE = "cpu"\nTOLERANCES = {"ops": {"matmull": {"float32": {"atol": 1}}}}\n', "TOLERANCES.ops: unknown op 'matmull'"),
        ('DEVICE = "cpu"\nOPS = {"include": ["zzz*"]}\n', "glob 'zzz*' matches no op"),
        ('DEVICE = "cpu"\nDTYPES = {"float32": "nothing_matches_this"}\n', "matches no op name"),
        ('import os\nDEVICE = "cpu"\n', "only NAME = <literal>"),
        ('DEVICE = "cpu"\nLEVEL = int("3")\n', "not a literal"),
        ('DEVICE = "cpu"\nCPU_FALLBACK = "sometimes"\n', "CPU_FALLBACK must be 'allow' or 'forbid'"),
    ],
    ids=["unknown-key", "unknown-capability", "unknown-dtype", "invalid-regex",
         "invalid-tolerance", "invalid-tolerance-key", "unknown-op", "unknown-op-exclude",
         "unknown-op-tolerance", "glob-matches-nothing", "regex-matches-nothing",
         "code-import", "code-call", "cpu-fallback-policy"],
)  # fmt: skip
def test_manifest_errors_name_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    """Each manifest error exits 2 with one line naming the file and the key or value."""
    code, output = _check(tmp_path, text, capsys)
    assert code == 2
    assert needle in output
    assert "manifest.py" in output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1


def test_a_manifest_past_the_size_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check-manifest refuses a valid manifest of more than 1 MiB with the line a
    run gives (it used to say ok to a manifest the archive then refused)."""
    code, output = _check(tmp_path, 'DEVICE = "cpu"\n' + "# note\n" * 160_000, capsys)
    assert code == 2
    assert output.strip() == (
        f"torchcts-cases: error: {tmp_path / 'manifest.py'}: manifest is larger than "
        "1 MiB (1048576 bytes), the most a manifest may hold"
    )


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_init_writes_a_valid_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str
) -> None:
    """Every template is a valid manifest, marked TEMPLATE = True, with comments."""
    out = tmp_path / "manifest.py"
    assert (
        main(["init", "--template", template, "--device", "mydev", "-o", str(out)]) == 0
    )
    text = out.read_text()
    assert "TEMPLATE = True" in text and text.count("#") > 10
    code, output = _check(tmp_path, text, capsys)
    assert code == 0 and "unedited template" in output


def test_written_manifests_pass_the_repository_lint(tmp_path: Path) -> None:
    """Every template, as init and as init-manifest (also with a name holding quotes
    and a non-ASCII character), is ruff-format clean and passes ruff check under the
    repository's config, so `make lint` passes after the README's init-manifest."""
    out = tmp_path / "manifests"
    out.mkdir()
    backend = ["--device", "simdev", "--backend-import", "torchcts_simdev"]
    for template in sorted(TEMPLATES):
        assert main(["init", "--template", template, "-o", f"{out}/{template}.py"]) == 0
        written = ["-o", f"{out}/my_{template}.py"]
        assert main(["init-manifest", "--template", template, *backend, *written]) == 0
    named = ["--backend-name", 'the "café" backend', "-o", f"{out}/named.py"]
    assert main(["init-manifest", "--device", "simdev", *named]) == 0
    config = ["--config", str(REPO / "pyproject.toml")]
    ruff = [sys.executable, "-m", "ruff"]
    for check in (["format", "--check", "--diff"], ["check"]):
        done = subprocess.run(
            [*ruff, *check, *config, str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_check_manifest_knows_the_compile_capabilities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compile, inductor and compile_fullgraph are capabilities check-manifest
    accepts; a misspelt one is one line listing them."""
    caps = '["forward", "compile", "inductor", "compile_fullgraph"]'
    code, output = _check(tmp_path, f'DEVICE = "cpu"\nCAPABILITIES = {caps}\n', capsys)
    assert code == 0, output
    code, output = _check(
        tmp_path, 'DEVICE = "cpu"\nCAPABILITIES = ["inductr"]\n', capsys
    )
    assert code == 2 and len(output.strip().splitlines()) == 1
    assert "unknown capability 'inductr'" in output
    assert all(
        f" {name}" in output for name in ("compile,", "inductor,", "compile_fullgraph")
    )


@pytest.mark.parametrize(
    ("checkout", "command"),
    [(True, "bin/torchcts-cases"), (False, "torchcts-cases")],
)
def test_init_manifest_prints_the_check_command_as_pasted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkout: bool,
    command: str,
) -> None:
    """At a checkout root (bin/ holds the launchers) the next step and the manifest's
    own instructions name bin/torchcts-cases; elsewhere the installed script."""
    if checkout:
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / ".launch").write_text("#!/bin/sh\n")
    (tmp_path / "manifests").mkdir()
    monkeypatch.chdir(tmp_path)
    words = ["--device", "simdev", "--backend-import", "torchcts_simdev"]
    assert main(["init-manifest", *words, "-o", "manifests/mybackend.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == (
        f"next: `{command} check-manifest manifests/mybackend.py`, then run it"
    )
    text = (tmp_path / "manifests" / "mybackend.py").read_text(encoding="utf-8")
    assert f"Check it with `{command} check-manifest FILE`" in text
    assert f"`{command} show-skips --manifest FILE`" in text


def test_init_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """init never overwrites an existing manifest without --force."""
    out = tmp_path / "manifest.py"
    out.write_text("keep me")
    assert main(["init", "--template", "smoke", "-o", str(out)]) == 2
    assert out.read_text() == "keep me"


@pytest.mark.parametrize("device", ["cpu", "meta", "cuda", "mps", "xpu", "simdev"])
def test_example_manifests_pass_check(
    device: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped manifests validate, op names included."""
    path = REPO / "manifests" / f"{device}.py"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this checkout yet")
    assert main(["check-manifest", str(path)]) == 0, capsys.readouterr().err


def test_show_skips_counts_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show-skips on the smoke template prints runnable and per-reason counts."""
    out = tmp_path / "manifest.py"
    main(["init", "--template", "smoke", "--device", "cpu", "-o", str(out)])
    capsys.readouterr()
    assert main(["show-skips", "--manifest", str(out)]) == 0
    text = capsys.readouterr().out
    assert "runnable" in text and "capability_not_declared" in text
    assert "nothing executed" in text


def test_list_prints_case_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """list prints one runnable case id per line."""
    out = tmp_path / "manifest.py"
    out.write_text('DEVICE = "cpu"\nDTYPES = {"float32": True}\n')
    assert (
        main(["list", "--manifest", str(out), "--op", "add", "--suite", "opinfo"]) == 0
    )
    ids = capsys.readouterr().out.split()
    # level 1: add's sample 0 and its edge samples (0-dim, broadcast, empty, a float
    # alpha) in every variant a manifest without CAPABILITIES runs: forward
    assert ids[0] == "opinfo/add/forward/float32/0" and len(ids) == len(set(ids))
    assert all(i.startswith("opinfo/add/forward/float32/") for i in ids)
    assert {"opinfo/add/forward/float32/8"} <= set(ids) and len(ids) > 1


def test_bad_filter_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown dtype filter is a usage error, not a traceback."""
    out = tmp_path / "manifest.py"
    out.write_text('DEVICE = "cpu"\n')
    assert main(["show-skips", "--manifest", str(out), "--dtype", "float99"]) == 2
    assert "unknown dtype 'float99'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["list", "show-skips"])
def test_a_glob_matching_no_case_is_one_line_and_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """An --op glob matching no case of the manifest was an empty listing and exit
    0; now one stderr line names the manifest and each such glob (not the one that
    matches), nothing on stdout, and exit 5 as pytest's "no tests collected"."""
    out = tmp_path / "manifest.py"
    out.write_text('DEVICE = "cpu"\nDTYPES = {"float32": True}\n')
    args = [command, "--manifest", str(out), "--suite", "opinfo", "--op", "add"]
    code = main([*args, "--op", "zzz*", "--op", "yyy*"])
    captured = capsys.readouterr()
    assert code == 5, captured.err
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"torchcts-cases: {out}: --op 'zzz*' matches nothing")
    assert "--op 'yyy*' matches nothing" in line and "'add'" not in line
    assert main(args) == 0  # the matching glob alone: as before


def test_list_json_joins_declared_surfaces_and_reached_overloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """list --json names the overloads a case reaches beside its declared packet, so
    the known-crash audit can match a rule on aten::add.Tensor."""
    from torchcts_cases import coverage_trace, surface_lookup
    from torchcts_cases.trace_store import StoredTrace

    trace = StoredTrace(key={}, complete=True)
    trace.put("opinfo/add/forward/float32/0", ["aten::add.Tensor"])
    monkeypatch.setattr(coverage_trace, "load", lambda: trace)
    surface_lookup.forget()
    out = tmp_path / "manifest.py"
    out.write_text('DEVICE = "cpu"\nDTYPES = {"float32": True}\n')
    argv = ["list", "--manifest", str(out), "--op", "add", "--suite", "opinfo"]
    assert main([*argv, "--json"]) == 0
    surface_lookup.forget()
    rows = {
        json.loads(x)["case_id"]: json.loads(x)
        for x in capsys.readouterr().out.splitlines()
    }
    assert rows["opinfo/add/forward/float32/0"]["surfaces"] == [
        "aten::add",
        "aten::add.Tensor",
    ]
