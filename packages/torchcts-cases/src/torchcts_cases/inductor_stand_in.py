"""A stand-in for ``torch._inductor.utils`` while PyTorch's OpInfo database imports.

``torch.testing._internal.common_device_type`` imports one constant,
``GPU_TYPES``, from ``torch._inductor.utils``; importing that package loads
torch._inductor, torch._dynamo and sympy, 1.26 of the database's 2.3 CPU-s on this
machine, in every process that builds OpInfo samples. The stand-in holds that one
list, read from the file's text, and is gone once the import is done.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import torch


@contextlib.contextmanager
def without_inductor() -> Iterator[None]:
    """Answer ``from torch._inductor.utils import GPU_TYPES`` with the list that file
    defines, read as text, for the length of the block.

    That import in ``common_device_type`` is the only reason the OpInfo database
    loads torch._inductor, torch._dynamo and sympy: 1.26 of its 2.3 CPU-s here, in
    every executing process (each xdist worker, isolation child, rerun). Cases never
    see the stand-in: it leaves ``sys.modules`` and ``torch`` when the block ends, so
    a later ``import torch._inductor`` (the compile suite) loads the real package. A
    torch whose OpInfo imports anything else of it gets an ImportError here, and the
    caller imports again the ordinary way.
    """
    names = ("torch._inductor", "torch._inductor.utils")
    gpu_types = inductor_gpu_types()
    if gpu_types is None or any(name in sys.modules for name in names):
        yield
        return
    package = types.ModuleType(names[0])
    package.__path__ = []  # a package that finds no other submodule
    utils = types.ModuleType(names[1])
    utils.GPU_TYPES = gpu_types  # type: ignore[attr-defined]
    package.utils = utils  # type: ignore[attr-defined]
    stand_ins = dict(zip(names, (package, utils), strict=True))
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
        if vars(torch).get("_inductor") is package:
            delattr(torch, "_inductor")


def inductor_gpu_types() -> list[str] | None:
    """The ``GPU_TYPES = [...]`` literal of torch/_inductor/utils.py; None when that
    file has no such line (the database is then imported the ordinary way)."""
    path = Path(torch.__file__).parent / "_inductor" / "utils.py"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"^GPU_TYPES\s*=\s*(\[[^\]\n]*\])\s*$", text, re.MULTILINE)
    if found is None:
        return None
    try:
        value = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return None
    return value


__all__ = ["inductor_gpu_types", "without_inductor"]
