"""The child interpreter: import the entry once, then run payloads until stdin closes.

Started as ``python <this file> ENTRY RESULT_FD FAULT_FILE HEARTBEAT_S [MODULE...]`` by
`torchcts_isolate.worker`. It is run by path and imports nothing from torchcts, so a
fresh child costs an interpreter start plus the entry's own imports, nothing more.
The optional MODULEs are imported, and the optional warm-up function named in
``TORCHCTS_ISOLATE_WARMUP`` is called, before the child says it is ready, so a warm
child has already paid for torch, the backend and their one-time setup. Requests arrive as JSON lines on stdin; everything the
parent needs comes back as JSON lines on the inherited ``RESULT_FD`` pipe, so the case's
own stdout and stderr stay untouched for the tails. A heartbeat thread writes ``hb``
messages: a native call that holds the GIL stops it, which is how the parent tells a
hang from a slow case. Closing stdin (or the parent dying) makes the child exit.

Messages to the parent: ``ready``, ``hb`` and ``start`` (with ``at``, the monotonic
time they were sent: the parent judges a hang by it, not by when it got round to
reading them), ``done`` (with ``result``) and ``raised`` (the entry raised; type,
message, traceback, ``memory``).
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import importlib
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TextIO

SYSPATH_ENV = "TORCHCTS_ISOLATE_SYSPATH"
SCRATCH_PREFIX = "torchcts-isolate-"
WARMUP_ENV = "TORCHCTS_ISOLATE_WARMUP"


class _Channel:
    """Line-oriented JSON writes to the result pipe, safe from two threads."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        self.send_text(json.dumps(message, allow_nan=True))

    def send_text(self, text: str) -> None:
        """Send one message already encoded as a JSON object (no newline in it)."""
        data = (text + "\n").encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self._fd, view)
                except OSError:  # the read end closed: the parent is gone
                    _die()
                view = view[written:]


_BUSY = threading.Event()


def _heartbeat(channel: _Channel, interval: float, parent: int) -> None:
    """Beat while a case runs; if the parent goes away, take the whole group down."""
    pause = threading.Event()
    while True:
        pause.wait(interval)
        try:
            if os.getppid() != parent:
                raise BrokenPipeError
            if _BUSY.is_set():
                channel.send({"t": "hb", "at": time.monotonic()})
        except OSError:
            _die()
        except MemoryError:
            continue  # the case hit its memory cap; the beat must not die with it


_SCRATCH: list[str] = []  # the parent's per-child directory, removed if orphaned
_SCRATCH_LOCK = threading.Lock()


def _remove_scratch() -> None:
    """Remove the scratch directory once, whichever thread gets here first."""
    with _SCRATCH_LOCK:
        while _SCRATCH:
            shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


def _die() -> None:
    """The parent is gone: remove its scratch files for it, then end the group."""
    try:
        _remove_scratch()
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(70)


def exit_without_teardown(code: int) -> NoReturn:
    """Exit as a normal exit would (non-daemon threads joined, ``atexit`` handlers run,
    streams flushed) but without the interpreter's teardown of every module and object:
    0.8-1.1 s (2 cores) in a process holding torch and OpInfo, which whoever waits for
    the process pays (the run closing its pool, the user at the end of a run). Used on
    a child's way out and by ``torchcts-run``'s pytest process."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _load_entry(entry: str) -> Callable[[dict[str, Any]], Any]:
    module_name, _, func_name = entry.partition(":")
    module = importlib.import_module(module_name)
    func = getattr(module, func_name)
    if not callable(func):
        raise TypeError(f"{entry} is not callable")
    return func  # type: ignore[no-any-return]


def _extend_sys_path() -> None:
    """Let the child import what the parent could (conftest dirs, pytester paths)."""
    extra = os.environ.get(SYSPATH_ENV)
    if not extra:
        return
    for item in json.loads(extra):
        if item not in sys.path:
            sys.path.append(item)


def limit_memory(memory_mb: int | None) -> tuple[int, int] | None:
    """Cap the address space at today's size plus ``memory_mb``; returns the old cap.

    The one implementation of the manifest's ``memory_mb``: an isolation child applies
    it around each case, and so does a process that runs cases in process, so an
    allocation past the limit fails the same way wherever the case runs.
    """
    if not memory_mb:
        return None
    import resource

    old = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None  # without /proc the baseline is unknown: no cap (Linux only)
    wanted = current + memory_mb * 1024 * 1024
    if old[1] != resource.RLIM_INFINITY:
        wanted = min(wanted, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (wanted, old[1]))
    return old


def restore_memory(old: tuple[int, int] | None) -> None:
    """Undo `limit_memory` (None: nothing was capped)."""
    if old is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, old)


@contextlib.contextmanager
def memory_limit(memory_mb: int | None) -> Iterator[None]:
    """`limit_memory` for the duration of a block."""
    old = limit_memory(memory_mb)
    try:
        yield
    finally:
        restore_memory(old)


def _run_one(
    channel: _Channel, func: Callable[[dict[str, Any]], Any], request: dict[str, Any]
) -> None:
    number = request["n"]
    channel.send(
        {"t": "start", "n": number, "pid": os.getpid(), "at": time.monotonic()}
    )
    old = limit_memory(request.get("memory_mb"))
    _BUSY.set()
    try:
        result = func(request["payload"])
        _BUSY.clear()
        restore_memory(old)
        if not isinstance(result, dict):
            raise TypeError(f"entry returned {type(result).__name__}, not a dict")
        text = json.dumps(result, allow_nan=True)
    except BaseException as exc:
        _BUSY.clear()
        restore_memory(old)
        _reap_descendants()
        _flush(sys.stdout, sys.stderr)
        channel.send(
            {
                "t": "raised",
                "n": number,
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "traceback": "".join(traceback.format_exception(exc))[-8000:],
                "memory": isinstance(exc, MemoryError),
            }
        )
        return
    _reap_descendants()
    _flush(sys.stdout, sys.stderr)
    # the result is encoded once, above (a value JSON cannot carry fails the case
    # there); the message wraps that text instead of decoding and encoding it again
    channel.send_text(f'{{"t": "done", "n": {int(number)}, "result": {text}}}')


def _descendants(pid: int) -> list[int]:
    """Live descendants on Linux (via /proc children lists); [] elsewhere."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", "rb") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def _reap_descendants() -> None:
    """Kill processes a case left behind, so the next case starts clean."""
    left = _descendants(os.getpid())
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in left:
        with contextlib.suppress(ChildProcessError):  # only direct children wait
            os.waitpid(pid, 0)


def _flush(*streams: TextIO) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def main(argv: list[str]) -> int:
    """Child entry point; see the module docstring for the protocol."""
    entry, result_fd, fault_path, beat = argv[0], int(argv[1]), argv[2], float(argv[3])
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    os.set_inheritable(result_fd, False)
    scratch = os.path.dirname(os.path.abspath(fault_path))
    if os.path.basename(scratch).startswith(SCRATCH_PREFIX):
        _SCRATCH.append(scratch)
    channel = _Channel(result_fd)
    # Requests come on a private copy of stdin; the case (and anything it starts)
    # sees /dev/null, so it can neither eat requests nor keep the pipe open.
    control = os.fdopen(os.dup(0), "r", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    fault_file = open(fault_path, "a", encoding="utf-8")  # noqa: SIM115 - lives on
    faulthandler.enable(file=fault_file, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        # The parent sends SIGUSR1 before killing a hung child: the C-level handler
        # dumps every thread's stack even while native code holds the GIL.
        faulthandler.register(signal.SIGUSR1, file=fault_file, all_threads=True)
    threading.Thread(
        target=_heartbeat, args=(channel, beat, os.getppid()), daemon=True
    ).start()
    _extend_sys_path()
    try:
        func = _load_entry(entry)
        for module in argv[4:]:  # warm-up imports (torch, the backend) before "ready"
            importlib.import_module(module)
        warmup = os.environ.pop(WARMUP_ENV, None)
        if warmup:
            spec = json.loads(warmup)
            _load_entry(spec["entry"])(spec["args"])
    except BaseException as exc:
        channel.send(
            {
                "t": "raised",
                "n": -1,
                "type": type(exc).__name__,
                "message": f"starting {entry}: {exc}"[:2000],
                "traceback": "".join(traceback.format_exception(exc))[-8000:],
                "memory": isinstance(exc, MemoryError),
            }
        )
        return 72
    channel.send({"t": "ready", "pid": os.getpid()})
    for line in control:
        if line.strip():
            _run_one(channel, func, json.loads(line))
    # stdin closed: the parent is done with us (or dead); its scratch files go too
    _remove_scratch()
    exit_without_teardown(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
