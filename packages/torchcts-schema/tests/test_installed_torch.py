"""The installed torch's version, read from its files without importing it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROBE = textwrap.dedent(
    """
    import sys
    from torchcts_schema import TorchNotFound, torch_dir, torch_version
    try:
        print(torch_version())
        print(torch_dir().name)
    except TorchNotFound as exc:
        print("not found:", exc)
    print("torch imported" if "torch" in sys.modules else "torch not imported")
    """
)


def _probe(path: Path | None = None) -> list[str]:
    """Run the probe in a fresh interpreter (optionally with `path` first)."""
    env = None
    if path is not None:
        env = {
            **os.environ,
            "PYTHONPATH": f"{path}{os.pathsep}" + os.environ.get("PYTHONPATH", ""),
        }
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return out.stdout.splitlines()


def _fake_torch(root: Path, version_py: str) -> Path:
    """A torch package that raises when imported, with the given version.py."""
    package = root / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / "version.py").write_text(version_py)
    return root


def test_the_version_is_torchs_own_without_importing_it() -> None:
    """The real installed torch: the same string torch.__version__ gives, and torch
    is still not imported afterwards."""
    torch = pytest.importorskip("torch")
    assert _probe() == [str(torch.__version__), "torch", "torch not imported"]


def test_the_version_file_is_parsed_not_executed(tmp_path: Path) -> None:
    """A version.py whose other lines would fail if run still gives its string."""
    root = _fake_torch(
        tmp_path, "import no_such_module\n__version__ = '9.1.0a0+git123'\n"
    )
    assert _probe(root) == ["9.1.0a0+git123", "torch", "torch not imported"]


@pytest.mark.parametrize(
    "version_py", ["__version__ = 3\n", "version = '1.0'\n", "def (:\n"]
)
def test_a_version_file_without_a_string_is_not_found(
    tmp_path: Path, version_py: str
) -> None:
    """No ``__version__`` string (or no parse) is TorchNotFound naming the file,
    never a guess."""
    lines = _probe(_fake_torch(tmp_path, version_py))
    assert lines[0].startswith("not found: ") and "version.py" in lines[0]
    assert lines[-1] == "torch not imported"
