"""``-n auto`` in a TorchCTS run: select first, then start as many workers as the
selection calls for (`worker_choice`), possibly none.

xdist asks for the worker count (``pytest_xdist_auto_num_workers``) before any
worker exists, so the controller's role is made here, selects in this thread, and
is handed on to `plugin.pytest_configure` through the config's stash. The plan it
made serves every later ask (the in-process executor, the plan file xdist workers
read), so selecting first costs no second selection; what it does cost is the
overlap of selection with worker start-up when workers are chosen, which is why
small selections, whose selection is short, are the ones that skip the workers.
"""

from __future__ import annotations

import pytest

from torchcts_runner.controller_hooks import ControllerRole
from torchcts_runner.settings import RunSettings, resolve_settings
from torchcts_runner.worker_choice import (
    WorkerChoice,
    available_cores,
    choose_workers,
    given_workers,
)

CONTROLLER = pytest.StashKey[ControllerRole]()


def choose(config: pytest.Config) -> int:
    """The worker count for ``-n auto`` (0: in process), from the planned cases."""
    if config.option.collectonly or getattr(config.option, "help", False):
        return 0  # nothing runs: no reason to select here
    settings = resolve_settings(config)
    assert settings is not None
    controller = ControllerRole(config, settings)
    config.stash[CONTROLLER] = controller
    planned = len(controller.background.now().to_run)
    controller.note_workers(by_work(settings, planned))
    assert controller.workers is not None
    return controller.workers.count


def by_work(settings: RunSettings, planned: int) -> WorkerChoice:
    """The choice for `planned` cases on this machine, capped by the manifest."""
    cap = settings.manifest.resource_limits.get("workers")
    return choose_workers(
        planned,
        device=settings.device,
        cores=available_cores(),
        cap=int(cap) if cap else None,
    )


def controller_for(config: pytest.Config, settings: RunSettings) -> ControllerRole:
    """The controller `choose` made, or a new one noting the explicit ``-n``."""
    made = config.stash.get(CONTROLLER, None)
    if made is not None:
        return made
    controller = ControllerRole(config, settings)
    count = getattr(config.option, "numprocesses", None)
    controller.note_workers(given_workers(count if isinstance(count, int) else None))
    return controller


__all__ = ["CONTROLLER", "by_work", "choose", "controller_for"]
