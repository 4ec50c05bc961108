"""Repository scripts as modules, for the tests of bench/ and tools/ (folders that are
not packages, and not on the tests' import path)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at `relative` (from the repository root), imported under its file
    name and registered there: its dataclasses look their module up by name, and
    its siblings import it by name (``soak.py`` imports ``soak_compare``)."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
