"""pytest's per-item protocol for a case item, in one pass instead of three phases.

pytest runs every item as setup, call and teardown: three hook calls, each through
its plugins (capture resumed, suspended and read, ``PYTEST_CURRENT_TEST`` set, the
setup stack, thread-exception collection, skip and xfail marks), each with a
``CallInfo`` and a ``pytest_runtest_makereport`` call. A case item has no fixtures,
no collector to set up or tear down and no marks, so its setup and teardown do
nothing but cost: about a quarter of a level-4 run's wall time went to the protocol
around the cases (py-spy, 105,480 cases).

For a case item this pass does what those phases amount to: logstart; a passed setup
report; the case run once under capture, its report made by the makereport hook as
pytest makes it (the outcome, the failure's text, plugins' wrappers), an exception a
thread raised meanwhile made the item's warning, and the interaction hook after a
failure; a passed teardown report once the item let go of
its record; logfinish. Every report is logged through ``pytest_runtest_logreport``
as before, so the terminal, xdist, JUnit XML and TorchCTS's own hooks see the same
three reports. The wrappers of ``pytest_runtest_protocol`` (warnings, faulthandler,
pytest-timeout, TorchCTS's backstop) still wrap it.

It is used only where it is the same: a case item with no marks, no debugger or
setup-only option, and no plugin beyond those known here taking part in the phases
(`lean_protocol_applies`); anything else gets pytest's own protocol.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from _pytest.runner import CallInfo, check_interactive_exception

from torchcts_runner.items import CaseItem

EXECUTOR_PLUGIN = "torchcts-executor"  # the executing process's role, as registered

# The plugins whose part in a case item's phases this pass stands for (by their
# registered names): pytest's own and pytest-timeout's (whose timer is set by its
# protocol wrapper, which still runs), and TorchCTS's executor.
PHASE_PLUGINS = frozenset(
    {
        "runner",
        "capturemanager",
        "skipping",
        "threadexception",
        "unraisableexception",
        "logging-plugin",
        "timeout",
        EXECUTOR_PLUGIN,
    }
)
REPORT_PLUGINS = frozenset({"runner", "skipping", "unittest", "tmpdir"})
PHASE_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")
_DEBUG_OPTIONS = ("usepdb", "trace", "setuponly", "setupshow", "setupplan")
_APPLIES = pytest.StashKey[bool]()
_CURRENT_TEST = "PYTEST_CURRENT_TEST"


def lean_protocol_applies(config: pytest.Config) -> bool:
    """May case items of this session skip pytest's phases (found once)?"""
    found = config.stash.get(_APPLIES, None)
    if found is None:
        found = _applies(config)
        config.stash[_APPLIES] = found
    return found


def _applies(config: pytest.Config) -> bool:
    if any(config.getoption(name, False) for name in _DEBUG_OPTIONS):
        return False
    try:
        if config.getini("timeout_func_only"):
            return False  # pytest-timeout would set its timer in the call phase
    except ValueError:
        pass  # no pytest-timeout
    hook = config.pluginmanager.hook
    for name in PHASE_HOOKS:
        if not _only(getattr(hook, name), PHASE_PLUGINS):
            return False
    return _only(hook.pytest_runtest_makereport, REPORT_PLUGINS | PHASE_PLUGINS)


def _only(caller: Any, known: frozenset[str]) -> bool:
    return all(impl.plugin_name in known for impl in caller.get_hookimpls())


class CaseProtocol:
    """The plugin: takes ``pytest_runtest_protocol`` for the case items it applies to."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """Run a case item in one pass; None leaves any other item to pytest."""
        if not isinstance(item, CaseItem) or item.own_markers:
            return None
        if not lean_protocol_applies(item.config):
            return None
        run_case_protocol(item)
        return True


def run_case_protocol(item: CaseItem) -> None:
    """logstart, the three reports of a case item (see the module docstring),
    logfinish."""
    ihook = item.ihook
    location = item.location
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=location)
    ihook.pytest_runtest_logreport(report=_passed(item, "setup"))
    call = _call(item)
    _collect_thread_exceptions(item.config)
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    if check_interactive_exception(call, report):
        ihook.pytest_exception_interact(node=item, call=call, report=report)
    item.forget_record()  # as the executor's teardown hook has it do
    ihook.pytest_runtest_logreport(report=_passed(item, "teardown"))
    os.environ.pop(_CURRENT_TEST, None)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=location)


def _call(item: CaseItem) -> CallInfo[None]:
    """The case run once, under pytest's capture as its call phase is."""
    os.environ[_CURRENT_TEST] = f"{item.nodeid} (call)".replace("\x00", "(null)")
    capture = item.config.pluginmanager.get_plugin("capturemanager")
    reraise: tuple[type[BaseException], ...] = (
        pytest.exit.Exception,
        KeyboardInterrupt,
    )
    if capture is None:
        return CallInfo.from_call(item.runtest, when="call", reraise=reraise)

    def captured() -> None:
        with capture.item_capture("call", item):
            item.runtest()

    return CallInfo.from_call(captured, when="call", reraise=reraise)


def _collect_thread_exceptions(config: pytest.Config) -> None:
    """What pytest's thread-exception plugin does after each phase: an exception a
    thread raised during the case becomes a warning of this item (collected inside
    the protocol's warnings wrapper), not one of the session's end. Older pytest
    wraps the phases instead and has no such function; marks nothing then."""
    plugin = config.pluginmanager.get_plugin("threadexception")
    collect = getattr(plugin, "collect_thread_exception", None)
    if collect is not None:
        collect(config)


def _passed(item: CaseItem, when: Any) -> pytest.TestReport:
    """The report of a phase that had nothing to do, as pytest makes one."""
    now = CallInfo.from_call(lambda: None, when=when)
    return pytest.TestReport.from_item_and_call(item, now)


__all__ = [
    "EXECUTOR_PLUGIN",
    "CaseProtocol",
    "lean_protocol_applies",
    "run_case_protocol",
]
