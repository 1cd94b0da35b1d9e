"""`phalanx bench docs PAGE`: rebuilds each table of a docs page from the raw results it names.

A table is written between two markers; the first names its kind and its raw results, as paths or
globs relative to the page (a folder stands for its bench.json), and options (`tasks=cartpole,ant`,
`levels=5,10,20` for a milestones table):

    <!-- bench-table throughput: results/throughput-h200-2026-11-29/*.json -->
    <!-- bench-table end -->

`--check` rebuilds nothing and fails where a table differs from what its results give."""

from __future__ import annotations

import os
import re
from pathlib import Path

from rich.console import Console

from phalanx.bench.docs_tables import table
from phalanx.bench.options import DocsCfg
from phalanx.bench.report import read_bench
from phalanx.core.errors import ConfigError
from phalanx.core.files import write_text_atomic
from phalanx.flags import parse_flags

MARKER = "<!-- bench-table "
END = "<!-- bench-table end -->"
BEGIN = r"<!-- bench-table (?P<kind>[a-z]+(?:-[a-z]+)*): (?P<sources>[^\n]*?) -->"
BLOCK = re.compile(f"(?P<begin>{BEGIN}\n)(?P<body>.*?)(?P<end>{END})", re.S)


def rebuilt(page: Path) -> str:
    """The page's text with each of its tables rebuilt from its raw results."""
    try:
        text = page.read_text()
    except OSError as error:
        raise ConfigError(f"bench docs: cannot read {page} ({error.strerror})") from None
    _check_markers(page, text)

    def block(m: re.Match[str]) -> str:
        words = m["sources"].split()
        options = dict(w.split("=", 1) for w in words if "=" in w)
        patterns = [w for w in words if "=" not in w]
        if not patterns:
            raise ConfigError(f"bench docs: {page}: the {m['kind']} table's marker names no raw results")
        paths = _paths(page, patterns)
        sources = [(read_bench(path, "bench docs"), _link(path, page)) for path in paths]
        return f"{m['begin']}\n{table(m['kind'], sources, options)}\n\n{m['end']}"

    return BLOCK.sub(block, text)


def _check_markers(page: Path, text: str) -> None:
    """Each marker on a line of its own, well formed, a table's begin then its end."""
    open_at = None
    for number, line in enumerate(text.splitlines(), 1):
        if MARKER not in line:
            continue
        where = f"bench docs: {page}:{number}"
        if line.strip() == END:
            if open_at is None:
                raise ConfigError(f"{where}: an end marker without a table's begin marker before it")
            open_at = None
        elif re.fullmatch(BEGIN, line) is None:
            raise ConfigError(
                f"{where}: expected `<!-- bench-table KIND: RESULTS... -->` (kind: lowercase words joined by hyphens)"
            )
        elif open_at is not None:
            raise ConfigError(f"{where}: a begin marker inside the table begun on line {open_at}")
        else:
            open_at = number
    if open_at is not None:
        raise ConfigError(f"bench docs: {page}:{open_at}: a table's begin marker without `{END}` after it")


def _paths(page: Path, patterns: list[str]) -> list[Path]:
    paths = []
    for pattern in patterns:
        if Path(pattern).is_absolute():
            raise ConfigError(f"bench docs: {page}: {pattern!r} is absolute; name raw results relative to the page")
        found = sorted(page.parent.glob(pattern))
        if not found:
            raise ConfigError(f"bench docs: {page}: {pattern!r} matches no file under {page.parent}")
        paths += [p / "bench.json" if p.is_dir() else p for p in found]
    return paths


def _link(path: Path, page: Path) -> str:
    """The link from the page to the folder of a result's raw files."""
    return Path(os.path.relpath(path.parent.resolve(), page.parent.resolve())).as_posix() + "/"


def pages(paths: list[str]) -> list[Path]:
    """The markdown files named, and those under the folders named that hold a table marker (the
    raw results under results/ aside)."""
    found = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        for page in sorted(path.rglob("*.md")):
            if "results" not in page.relative_to(path).parts and MARKER in page.read_text():
                found.append(page)
    return found


def run_docs(args: list[str], console: Console) -> int:
    cfg = parse_flags(DocsCfg, None, args, "phalanx bench docs")
    stale = []
    for page in pages(list(cfg.pages)):
        text = rebuilt(page)
        if text == page.read_text():
            console.print(f"{page}: its tables are as its raw results give them")
        elif cfg.check:
            stale.append(page)
        else:
            write_text_atomic(page, text)
            console.print(f"{page}: rebuilt its tables from their raw results")
    for page in stale:
        console.print(f"{page}: its tables differ from its raw results; `phalanx bench docs {page}` rebuilds them")
    return 1 if stale else 0
