"""The pytest process ``torchcts-run`` starts: pytest's console entry, then an exit
without the interpreter's teardown.

After its last ``atexit`` handler a process holding torch and PyTorch's OpInfo database
still spends 0.8-1.1 s (2 cores) tearing down every module and object it made, and the
run's tail waits for it. Nothing a run writes depends on that teardown: artifacts are
written atomically and closed, the runlog at ``pytest_unconfigure``. So the process
ends as `exit_without_teardown` says. Only the process ``torchcts-run`` starts exits
so: pytest started any other way (``python -m pytest``, pytester) ends as usual.
"""

from __future__ import annotations

from typing import NoReturn

import pytest
from torchcts_isolate import exit_without_teardown


def main() -> NoReturn:
    """Run pytest with this process's arguments and leave with its exit code."""
    exit_without_teardown(int(pytest.console_main()))


if __name__ == "__main__":
    main()
