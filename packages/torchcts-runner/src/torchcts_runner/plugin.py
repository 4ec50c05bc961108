"""The TorchCTS pytest plugin (``pytest11`` entry point ``torchcts``): hooks only.

Inert unless ``--torchcts-manifest`` is given. Then the process takes its roles: an
xdist worker executes cases; an xdist controller owns the results; a run without
xdist does both. The roles live in `executor` and `control`; the logic they use lives
in small modules that import neither pytest nor, where they can, torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchcts_runner.options import add_options

MAX_WORKER_RESTART = "1000000"  # a crashing backend must not stop the run


def pytest_addoption(parser: pytest.Parser) -> None:
    """The torchcts option group."""
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Let the run go on past xdist's default worker-restart limit."""
    if (
        config.getoption("torchcts_manifest", None)
        and hasattr(config.option, "maxworkerrestart")
        and config.option.maxworkerrestart is None
    ):
        config.option.maxworkerrestart = MAX_WORKER_RESTART


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: as many workers as the planned cases call for (`auto_workers`)."""
    if not config.getoption("torchcts_manifest", None):
        return None  # not a TorchCTS run: xdist's own count
    from torchcts_runner.auto_workers import choose

    return choose(config)


def _xdist_controls(config: pytest.Config) -> bool:
    dist = getattr(config.option, "dist", "no")
    return dist != "no" and not config.getoption("collectonly")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the roles this process plays."""
    if not config.getoption("torchcts_manifest", None):
        return  # inert: nothing below is imported unless asked for
    from torchcts_runner.auto_workers import controller_for
    from torchcts_runner.executor_hooks import ExecutorRole
    from torchcts_runner.settings import resolve_settings
    from torchcts_runner.xdist_hooks import XdistControllerHooks

    settings = resolve_settings(config)
    assert settings is not None
    config.addinivalue_line("markers", "timeout: per-case limit (pytest-timeout)")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        executor = ExecutorRole(
            config,
            settings,
            str(workerinput["torchcts_run_key"]),
            frozenset,  # the controller's plan already leaves finished cases out
            plan_file=Path(workerinput["torchcts_plan"]),
        )
        config.pluginmanager.register(executor, "torchcts-executor")
        return
    controller = controller_for(config, settings)
    config.pluginmanager.register(controller, "torchcts-controller")
    if _xdist_controls(config):
        config.pluginmanager.register(
            XdistControllerHooks(controller), "torchcts-xdist"
        )
        controller.start_planning()
        return
    executor = ExecutorRole(
        config,
        settings,
        controller.run_key,
        lambda: controller.done,
        controller.hard_timeout,
        plan=controller.background.ready,
    )
    controller.local_executor = executor
    config.pluginmanager.register(executor, "torchcts-executor")
