"""The command-line words every TorchCTS tool shares, so the tools read as one.

Five tools once spelled the results directory five ways (``--results``, ``path``,
``results_dir``, ``results``, ``--torchcts-results``), and only some had ``--version``
or listed their exit codes. Each tool now builds those parts here: ``--results DIR``
(an older positional spelling stays accepted but hidden from ``--help``), a
``--version`` line of the form ``<tool> <version>``, and an exit-code list for the
``--help`` epilog. argparse only; no torch, no pytest.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from torchcts_schema.errors import ArtifactError

DEFAULT_RESULTS = "results"


def add_version_option(
    parser: argparse.ArgumentParser, prog: str, version: str
) -> None:
    """``--version``: print ``<prog> <version>`` and exit 0."""
    parser.add_argument(
        "--version",
        action="version",
        version=f"{prog} {version}",
        help="print the tool's name and version, then exit",
    )


def exit_codes_epilog(codes: Mapping[int, str], lead: str = "") -> str:
    """The ``--help`` epilog listing every exit code (use RawDescriptionHelpFormatter)."""
    lines = "\n".join(f"  {code:>3}  {why}" for code, why in sorted(codes.items()))
    listing = f"exit codes:\n{lines}"
    return f"{lead}\n\n{listing}" if lead else listing


class ToolParser:
    """A tool's argparse parser with ``--version``, its exit codes in ``--help``, and
    subcommands that list the same exit codes (one layout for every tool)."""

    def __init__(self, prog: str, description: str, version: str, epilog: str) -> None:
        self.epilog = epilog
        self.parser = argparse.ArgumentParser(
            prog=prog,
            description=description,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_version_option(self.parser, prog, version)
        self._commands = self.parser.add_subparsers(
            dest="command", required=True, metavar="COMMAND"
        )

    def add(self, name: str, text: str) -> argparse.ArgumentParser:
        """A subcommand whose one-line `text` is its help and description."""
        return self._commands.add_parser(
            name,
            help=text,
            description=text,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )


def add_results_option(
    parser: argparse.ArgumentParser,
    *,
    legacy: str | None = None,
    help_text: str = "results directory (default: results)",
) -> None:
    """``--results DIR`` (default None: resolve with `pick_results_dir`).

    `legacy` names an older positional spelling kept working but not shown in help.
    """
    parser.add_argument("--results", metavar="DIR", default=None, help=help_text)
    if legacy:
        parser.add_argument(legacy, nargs="?", default=None, help=argparse.SUPPRESS)


def pick_results_dir(
    given: str | None, positional: str | None, default: str = DEFAULT_RESULTS
) -> str:
    """The results directory from ``--results`` or the older positional spelling.

    Both given and different is a usage error naming both, never a silent choice.
    """
    if given and positional and str(given) != str(positional):
        raise ArtifactError(
            str(positional),
            f"given both as --results {str(given)!r} and as a positional path",
        )
    return str(given or positional or default)


__all__ = [
    "DEFAULT_RESULTS",
    "ToolParser",
    "add_results_option",
    "add_version_option",
    "exit_codes_epilog",
    "pick_results_dir",
]
