"""Run metadata and the command line as recorded: path-free, host-free."""

from __future__ import annotations

import os
import platform
import shlex
import sys
from pathlib import Path

from torchcts_schema import (
    DEFAULT_RESULTS,
    RUNTIME_MODIFICATIONS_OPTION,
    TOOL_PREFIX_OPTION,
    RunMetadata,
    TorchNotFound,
    tool_prefix_at,
)
from torchcts_schema import torch_version as installed_torch_version

from torchcts_runner import __version__
from torchcts_runner.device_environment import runtime_modifications
from torchcts_runner.device_families import adapter_for
from torchcts_runner.run_folder import USER_COMMAND_ENV
from torchcts_runner.run_writer import now_iso
from torchcts_runner.settings import RunSettings

DEVICE_FAMILY_OPTION = "device_family"
MEMORY_OPTION = "device_memory"  # per executing process, at the run's end


def shareable_path(text: str) -> str:
    """A path relative to the working directory when inside it, else its name."""
    try:
        path = Path(text)
    except (TypeError, ValueError):
        return text
    if not path.is_absolute():
        return text
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.name


def usable_path(text: str) -> str:
    """A path a person can paste where the run was started, never an absolute one:
    relative to the working directory when possible, else ``~/...`` under the home
    directory, else relative with ``..``."""
    path = Path(text)
    if not path.is_absolute():
        return path.as_posix()
    cwd = Path.cwd()
    if path.is_relative_to(cwd):
        return path.relative_to(cwd).as_posix()
    home = Path.home()
    if home != Path("/") and path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    return Path(os.path.relpath(path, cwd)).as_posix()


def recorded_command(argv: list[str] | None = None) -> str:
    """The exact command, program name and paths made shareable."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    program = os.path.basename(argv[0])
    if program in ("__main__.py", "pytest.py"):
        program = "pytest"
    return shlex.join(
        [program, *(shareable_path(a) if os.sep in a else a for a in argv[1:])]
    )


def torch_version() -> str:
    """The installed PyTorch version, without paying for ``import torch``
    ("unknown" where no torch is installed)."""
    try:
        return installed_torch_version()
    except TorchNotFound:
        return "unknown"


def build_metadata(
    settings: RunSettings, run_key: str, hardware_key: str
) -> RunMetadata:
    """Metadata at the start of a run; counts and end time come at the end."""
    manifest = settings.manifest
    options = settings.as_options()
    internal = recorded_command()
    command = os.environ.get(USER_COMMAND_ENV) or internal
    if command != internal:
        options["pytest_command"] = internal  # what ran underneath, for debugging
    # rerun commands in reports and crash records name the manifest from here
    options["manifest"] = usable_path(str(manifest.path))
    results = usable_path(str(settings.results_root or settings.results_dir))
    if results != DEFAULT_RESULTS:  # rerun commands then name it, to land beside it
        options["results"] = results
    if prefix := tool_prefix_at():  # started at a checkout root: bin/torchcts-run
        options[TOOL_PREFIX_OPTION] = prefix
    # the family, its toolkit and device count; what in the environment changes how
    # the backend behaves, as the evidence store labels it
    options[DEVICE_FAMILY_OPTION] = adapter_for(settings.device).describe(os.environ)
    if modifications := runtime_modifications(settings.device):
        options[RUNTIME_MODIFICATIONS_OPTION] = modifications
    return RunMetadata(
        run_key=run_key,
        device=settings.device,
        hardware_key=hardware_key,
        backend=manifest.backend_name,
        os=platform.system(),
        python=platform.python_version(),
        torch_version=torch_version(),
        torchcts_version=__version__,
        manifest_digest=manifest.digest,
        command=command,
        started_at=now_iso(),
        level=settings.level if settings.level is not None else manifest.level,
        options=options,
    )


__all__ = [
    "DEVICE_FAMILY_OPTION",
    "MEMORY_OPTION",
    "build_metadata",
    "recorded_command",
    "shareable_path",
    "torch_version",
    "usable_path",
]
