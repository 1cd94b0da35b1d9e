"""The console phalanx prints to."""

from __future__ import annotations

from typing import IO

from rich.console import Console

MIN_WIDTH = 160


def wide_console(file: IO[str] | None = None) -> Console:
    """A rich console at least `MIN_WIDTH` columns wide (the terminal's width where it is wider):
    lines written to a file or a pipe, where rich assumes 80 columns, stay one line each."""
    return Console(file=file, width=max(MIN_WIDTH, Console(file=file).width))
