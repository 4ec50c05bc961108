"""Facts of the installed torch read from its files, without importing it.

Selection keys its caches (the case index, the hand-written cases' listing, the
coverage trace) by the torch version, and an xdist controller selects but never runs
a case: importing torch there cost an interpreter's 1.3-1.4 CPU-s on the path to the
first case, for one string. The version is read from ``torch/version.py`` (the file
``torch.__version__`` itself comes from); once torch is imported, its own attributes
answer, so the two can never disagree within a process that has both.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from pathlib import Path


class TorchNotFound(RuntimeError):
    """No importable torch package (or a version file that does not parse)."""


def torch_version() -> str:
    """``str(torch.__version__)``, without importing torch when it is not loaded."""
    loaded = sys.modules.get("torch")
    if loaded is not None and hasattr(loaded, "__version__"):
        return str(loaded.__version__)
    return _version_from_file()


def torch_dir() -> Path:
    """The directory of the torch package (``Path(torch.__file__).parent``)."""
    loaded = sys.modules.get("torch")
    if loaded is not None and getattr(loaded, "__file__", None):
        return Path(str(loaded.__file__)).parent
    return _package_dir()


@functools.cache
def _package_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise TorchNotFound("torch is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _version_from_file() -> str:
    path = _package_dir() / "version.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise TorchNotFound(f"{path}: cannot read torch's version ({exc})") from None
    for node in tree.body:
        target = getattr(node, "target", None)
        targets = getattr(node, "targets", [target])
        value = getattr(node, "value", None)
        if (
            any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return value.value
    raise TorchNotFound(f"{path}: no __version__ string")


__all__ = ["TorchNotFound", "torch_dir", "torch_version"]
