"""The pytest process ``torchcts-run`` starts: ``python -m pytest`` as it is, then an
exit without the interpreter's teardown.

After its last ``atexit`` handler a process holding torch and PyTorch's OpInfo database
still spends 0.8-1.1 s (2 cores) tearing down every module and object it made, and the
run's tail waits for it. Nothing a run writes depends on that teardown: artifacts are
written atomically and closed, the runlog at ``pytest_unconfigure``. So the process
ends as `exit_without_teardown` says. Only the process ``torchcts-run`` starts exits
so: pytest started any other way (``python -m pytest``, pytester) ends as usual.
"""

from __future__ import annotations

import runpy
import sys
from typing import NoReturn

from torchcts_isolate import exit_without_teardown


def main() -> NoReturn:
    """Run pytest's ``__main__`` (its own program name and ``sys.argv``, so what the
    run records is the ``pytest ...`` line) and leave with its exit status."""
    try:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    except SystemExit as ended:
        exit_without_teardown(exit_status(ended.code))
    exit_without_teardown(0)


def exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process: None is 0, an int is itself,
    anything else is printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
