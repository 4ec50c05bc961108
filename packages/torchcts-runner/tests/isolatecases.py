"""The runner's fake case source plus two ops only isolation can survive (tests only).

``gilhang`` deadlocks in C holding the GIL (no Python thread runs, so the child's
heartbeat stops, and no signal handler runs either); ``memory`` allocates far past a small memory limit;
``bigref`` holds 384 MiB while it builds its CPU reference (the harness's part of the
case, which no memory limit covers) and then passes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from pathlib import Path
from typing import Any

import fakecases
from fakecases import (  # noqa: F401 - the case-source contract, re-exported
    CaseSpec,
    OracleUnavailable,
    SelectedCases,
    Selection,
    get_case,
    torchcts_configure,
    write_oracle_failure,
)

CHILDREN_LOG = "ISOLATECASES_CHILDREN_AT_SELECT"  # a file: isolation children seen
STARTS_LOG = "ISOLATECASES_CHILD_STARTS"  # a file: a line per isolation child started
if os.environ.get(STARTS_LOG) and Path(sys.argv[0]).name == "child.py":
    with open(os.environ[STARTS_LOG], "a", encoding="utf-8") as _log:
        _log.write(f"{os.getpid()}\n")  # the child preloads this source at its start


def select_cases(manifest: Any, selection: Selection) -> SelectedCases:
    """fakecases' selection; with ``$ISOLATECASES_CHILDREN_AT_SELECT`` set, first
    write how many isolation children this process has started by now."""
    log = os.environ.get(CHILDREN_LOG)
    if log:
        Path(log).write_text(str(len(_isolation_children())), encoding="utf-8")
    return fakecases.select_cases(manifest, selection)


def _isolation_children() -> list[int]:
    """Live child processes of this one that run the isolation child."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and b"torchcts_isolate" in command:
            found.append(int(entry.name))
    return found


def warm_up(specs: object = None) -> None:
    """Load torch before the first case, as a real case source's import does, so
    the device health probe after an error finds it loaded (`specs`: the cases to
    run, as the runner passes them to a source's warm_up)."""
    import torch  # noqa: F401


class PreparedCase(fakecases.PreparedCase):
    """fakecases' prepared case with the three extra ops."""

    def reference(self) -> object:
        if self.spec.op == "bigref":
            held = bytearray(384 * 2**20)
            return [1.0, 2.0, float(len(held) >> 29)]  # 0.0, as run_on gives
        return super().reference()

    def run_on(self, device: str) -> object:
        if self.spec.op == "gilhang":  # relock a held mutex: no signal ends the wait
            libc = ctypes.PyDLL(ctypes.util.find_library("c") or None)
            mutex = ctypes.create_string_buffer(128)
            libc.pthread_mutex_init(mutex, None)
            libc.pthread_mutex_lock(mutex)
            libc.pthread_mutex_lock(mutex)
        if self.spec.op == "memory":
            hoard = [bytearray(64 * 2**20) for _ in range(64)]
            return [float(len(hoard))]
        if self.spec.op == "bigref":
            return [1.0, 2.0, 0.0]
        return super().run_on(device)

    def repro_source(
        self, device: str, backend_import: str | None, options: dict[str, Any]
    ) -> str:
        """fakecases' script, saying which program built it."""
        built_by = Path(sys.argv[0]).name
        return f"{super().repro_source(device, backend_import, options)}# {built_by}\n"


def prepare(spec: CaseSpec, manifest: Any) -> PreparedCase:
    """Build the case (nothing to build for fake ops)."""
    return PreparedCase(spec)
