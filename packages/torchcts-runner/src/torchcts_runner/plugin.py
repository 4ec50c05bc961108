"""The TorchCTS pytest plugin (``pytest11`` entry point ``torchcts``): hooks only.

Inert unless ``--torchcts-manifest`` is given. Then the process takes its roles: an
xdist worker executes cases; an xdist controller owns the results; a run without
xdist does both. The roles live in `executor` and `control`; the logic they use lives
in small modules that import neither pytest nor, where they can, torch.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from torchcts_runner.options import add_options

if TYPE_CHECKING:
    from torchcts_runner.warm_start import WarmStart

MAX_WORKER_RESTART = "1000000"  # a crashing backend must not stop the run
WARM_START = pytest.StashKey["WarmStart"]()


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
    _warm_start(config)


def _warm_start(config: pytest.Config, *, here: bool = False) -> WarmStart | None:
    """This process's import thread (`warm_start`), started once where cases run
    or may run (`here`: the plan says they run in this process); None elsewhere."""
    if config.stash.get(WARM_START, None) is not None:
        return config.stash[WARM_START]
    if not config.getoption("torchcts_manifest", None):
        return None
    if config.option.collectonly or getattr(config.option, "help", False):
        return None
    if config.getoption("torchcts_isolate", None) == "all":
        return None  # every case runs in the warm pool's child, which imports them
    from torchcts_runner.heap import pause_start_up
    from torchcts_runner.warm_start import WarmStart, stages_for

    start, tables = stages_for(
        worker=getattr(config, "workerinput", None) is not None,
        workers=0 if here else getattr(config.option, "numprocesses", None),
        names_cases=_names_cases(config),
    )
    if not start:
        return None
    warm = WarmStart(str(config.getoption("torchcts_case_source")))
    pause_start_up()  # until the first case (`heap`); ended at unconfigure at the latest
    warm.start()
    if tables:
        warm.add_case_tables()
    config.stash[WARM_START] = warm
    return warm


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: as many workers as the planned cases call for (`auto_workers`);
    in process, this process's imports start once that is known."""
    if not config.getoption("torchcts_manifest", None):
        return None  # not a TorchCTS run: xdist's own count
    from torchcts_runner.auto_workers import choose

    _warm_start(config)  # a run naming node ids imports beside selection
    count = choose(config)
    if count == 0:
        _warm_start(config, here=True)
    return count


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None]:
    """Once every plugin and initial conftest has added its options and before
    pytest parses for good: an option none of them knows is one line naming it
    (`unknown_options`), not pytest's usage text with absolute paths."""
    yield
    if not getattr(early_config.known_args_namespace, "torchcts_manifest", None):
        return  # not a TorchCTS run: pytest's own message
    _, unknown = parser.parse_known_and_unknown_args(args)
    if not unknown:
        return
    from torchcts_runner.unknown_options import unknown_option_line

    # argparse's table of every option string: pytest's, its plugins', conftests'
    known = set(parser.optparser._option_string_actions)
    if getattr(early_config.known_args_namespace, "torchcts_status_file", None):
        from torchcts_runner.cli import option_strings  # started by torchcts-run

        known |= set(option_strings())
    line = unknown_option_line(unknown, known)
    if line is not None:
        raise pytest.UsageError(line)


def _names_cases(config: pytest.Config) -> bool:
    from torchcts_schema import NODE_PREFIX

    return any(str(a).startswith(NODE_PREFIX) for a in config.args)


def _xdist_controls(config: pytest.Config) -> bool:
    dist = getattr(config.option, "dist", "no")
    return dist != "no" and not config.getoption("collectonly")


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    """A session that ended before its first case resumes collection here (a
    pytester run inside a test process must not leave it paused)."""
    if config.getoption("torchcts_manifest", None):
        from torchcts_runner.heap import end_start_up

        end_start_up()


def _register_executor(config: pytest.Config, executor: object) -> None:
    """An executing process's role and, beside it, the one-pass case protocol."""
    from torchcts_runner.case_protocol import EXECUTOR_PLUGIN, CaseProtocol

    config.pluginmanager.register(executor, EXECUTOR_PLUGIN)
    config.pluginmanager.register(CaseProtocol(), "torchcts-case-protocol")


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
            warm=config.stash.get(WARM_START, None),
        )
        _register_executor(config, executor)
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
        warm=config.stash.get(WARM_START, None),
    )
    controller.local_executor = executor
    _register_executor(config, executor)
