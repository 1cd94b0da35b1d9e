"""Command-line flag helpers shared by `phalanx train | play | bench`: the task argument, typed
flags from a dataclass with the task's defaults (tyro), and help."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from phalanx.core.errors import ConfigError

T = TypeVar("T")


def task_and_flags(command: str, args: list[str], registered: bool = True) -> tuple[str, list[str]]:
    """Splits `TASK --flags...`; with `registered`, the task must be registered. `--help` before
    a task prints the usage with the registered tasks and exits 0."""
    from phalanx.training.registry import registered_tasks, task_spec

    names = ", ".join(registered_tasks())
    if not args or args[0].startswith("-"):
        if args and args[0] in ("-h", "--help"):
            print(f"usage: phalanx {command} TASK [flags]\n\nTASK: {names}\n")
            print(f"`phalanx {command} TASK --help` lists the flags.")
            raise SystemExit(0)
        raise ConfigError(f"{command}: missing TASK; registered tasks: {names}")
    if registered:
        task_spec(args[0])  # raises UnknownTaskError listing the registered names
    return args[0], args[1:]


def parse_flags(cls: type[T], default: T | None, flags: list[str], prog: str, description: str | None = None) -> T:
    """`flags` parsed into a `cls` that starts from `default` (None: the class's defaults); an
    optional nested config (a terrain, a low-level policy) takes flags for its fields when the
    default has one. `description` heads the help (default: the class's docstring)."""
    import tyro

    _join_docstring_lines(tyro)
    # SuppressFixed: a term's function is the task's choice, not a flag (help would show `<function ...>`)
    config = (tyro.conf.AvoidSubcommands, tyro.conf.SuppressFixed)
    return tyro.cli(cls, default=default, args=flags, prog=prog, config=config, description=description)


LIST_ITEM = re.compile(r"([-*+]|\d+[.)])\s")


def _join_docstring_lines(tyro: Any) -> None:
    """Makes the help of a field re-wrap its docstring as paragraphs. tyro joins a docstring's
    lines only where a line starts with a letter, and a field's docstring reaches it with its
    continuation lines indented: every source line break stayed, and the help wrapped each
    source line on its own (ragged lines of a word or two). Here a paragraph's lines are joined
    first; a blank line and a list item ("- ", "* ", "1. ") still start a line."""
    strings = getattr(tyro, "_strings", None)
    join = getattr(strings, "remove_single_line_breaks", None)
    if join is None or getattr(join, "joins_indented_lines", False):
        return

    def remove_single_line_breaks(helptext: str) -> str:
        lines: list[str] = []
        for line in (line.strip() for line in helptext.split("\n")):
            if lines and lines[-1] and line and not LIST_ITEM.match(line):
                lines[-1] += " " + line
            else:
                lines.append(line)
        return join("\n".join(lines))

    remove_single_line_breaks.joins_indented_lines = True  # type: ignore[attr-defined]
    strings.remove_single_line_breaks = remove_single_line_breaks


def split_args(text: str, flag: str) -> list[str]:
    """`text` split as a shell would (e.g. `--train-args`); a stray quote is refused naming `flag`."""
    import shlex

    try:
        return shlex.split(text)
    except ValueError as error:
        raise ConfigError(f"{str(error).lower()} in {text!r}", flag) from None
