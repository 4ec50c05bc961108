"""Small entries the isolation tests run in child interpreters (no torch needed)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def echo(payload: dict[str, Any]) -> dict[str, Any]:
    """Return the payload, after writing to both streams."""
    print("out:" + str(payload.get("tag")))
    print("err:" + str(payload.get("tag")), file=sys.stderr)
    return {"echo": payload, "pid": os.getpid()}


def raises(payload: dict[str, Any]) -> dict[str, Any]:
    """Raise a Python exception."""
    raise ValueError("boom " + str(payload.get("tag")))


def segfault(payload: dict[str, Any]) -> dict[str, Any]:
    """Read address zero."""
    ctypes.string_at(0)
    return {}


def abort(payload: dict[str, Any]) -> dict[str, Any]:
    """abort(3): SIGABRT, as a failed C++ assertion would."""
    os.abort()


def native_hang(payload: dict[str, Any]) -> dict[str, Any]:
    """Sleep in C while holding the GIL (PyDLL keeps it), so no Python thread runs."""
    ctypes.PyDLL(None).sleep(int(payload.get("seconds", 60)))
    return {}


def released_sleep(payload: dict[str, Any]) -> dict[str, Any]:
    """Sleep with the GIL released: slow, but the heartbeat keeps going."""
    time.sleep(float(payload.get("seconds", 60)))
    return {"slept": True}


def large_result(payload: dict[str, Any]) -> dict[str, Any]:
    """Sleep like `released_sleep`, then return ``size`` characters: a result message
    longer than one read of the pipe."""
    time.sleep(float(payload.get("seconds", 0.2)))
    return {"text": "x" * int(payload.get("size", 300_000))}


def beat_then_hang(payload: dict[str, Any]) -> dict[str, Any]:
    """Beat for ``seconds`` (a GIL-released sleep), then hang holding the GIL."""
    time.sleep(float(payload.get("seconds", 0.3)))
    return native_hang({"seconds": 60})


def blow_memory(payload: dict[str, Any]) -> dict[str, Any]:
    """Allocate far more than the memory limit."""
    hoard = [bytearray(64 * 1024 * 1024) for _ in range(200)]
    return {"n": len(hoard)}


def capped_part(payload: dict[str, Any]) -> dict[str, Any]:
    """Hold 384 MiB outside any cap, then allocate 512 MiB under ``memory_limit`` of
    ``payload["memory_mb"]``: the part an entry caps itself."""
    from torchcts_isolate import memory_limit

    held = bytearray(384 * 1024 * 1024)
    try:
        with memory_limit(int(payload["memory_mb"])):
            bytearray(512 * 1024 * 1024)
    except MemoryError:
        return {"held_mb": len(held) >> 20, "inside": "MemoryError"}
    return {"held_mb": len(held) >> 20, "inside": "allocated"}


def bad_alloc_abort(payload: dict[str, Any]) -> dict[str, Any]:
    """Die as an uncaught C++ allocation failure does: its words on stderr, SIGABRT."""
    os.write(2, b"terminate called after throwing an instance of 'std::bad_alloc'\n")
    os.abort()


def exit_mid_case(payload: dict[str, Any]) -> dict[str, Any]:
    """Leave the interpreter without unwinding, as os._exit in a backend would."""
    print("about to exit", flush=True)
    os._exit(int(payload.get("code", 3)))


def grandchild(payload: dict[str, Any]) -> dict[str, Any]:
    """Start a long-lived grandchild, record its pid, then end as asked."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(payload["pid_file"], "w", encoding="utf-8") as fh:
        fh.write(str(proc.pid))
    if payload.get("then") == "segfault":
        ctypes.string_at(0)
    if payload.get("then") == "fork_and_segfault":
        if os.fork() == 0:  # a forked grandchild keeps every inherited pipe open
            time.sleep(120)
            os._exit(0)
        ctypes.string_at(0)
    return {"grandchild": proc.pid}


def not_a_dict(payload: dict[str, Any]) -> Any:
    """Return something that is not a JSON object."""
    return [1, 2, 3]


def loaded(payload: dict[str, Any]) -> dict[str, Any]:
    """Which of the named modules this child has imported."""
    return {"loaded": [m for m in payload["names"] if m in sys.modules]}


if os.environ.get("ISOLATE_ENTRIES_CRASH_ON_IMPORT") == "1":
    ctypes.string_at(0)  # a backend whose import segfaults


WARMED: dict[str, Any] = {}


def warm(args: dict[str, Any]) -> None:
    """A warm-up function: remember its arguments (or fail when asked)."""
    if args.get("fail"):
        raise RuntimeError("warm-up failed")
    WARMED.update(args)


def warmed(payload: dict[str, Any]) -> dict[str, Any]:
    """What the warm-up left behind in this child."""
    return {"warmed": WARMED}


def leaves_work_for_exit(payload: dict[str, Any]) -> dict[str, Any]:
    """Leave what a normal exit finishes: an atexit handler, a non-daemon thread still
    writing, and unflushed stdout; each writes to the files `payload` names."""
    import atexit
    import threading

    atexit.register(Path(payload["atexit"]).write_text, "ran")

    def late() -> None:
        time.sleep(0.3)
        Path(payload["thread"]).write_text("joined")

    threading.Thread(target=late, daemon=False).start()
    sys.stdout = open(payload["stdout"], "w", encoding="utf-8")  # noqa: SIM115
    sys.stdout.write("buffered, never flushed by the case")
    return {"pid": os.getpid()}
