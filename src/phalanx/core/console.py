"""The console phalanx prints to."""

from __future__ import annotations

from typing import IO

from rich.console import Console

MIN_WIDTH = 160


def wide_console(file: IO[str] | None = None) -> Console:
    """A rich console whose printed lines are never wrapped (a log line, a warning naming a long
    path, stays one line for grep and for tests), and whose tables are laid out at least
    `MIN_WIDTH` columns wide (the terminal's width where it is wider; rich assumes 80 on a file or
    a pipe)."""
    return Console(file=file, width=max(MIN_WIDTH, Console(file=file).width), soft_wrap=True)
