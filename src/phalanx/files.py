"""Writing files so that a crash never leaves half of one behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"
"""Temp files are named `.STEM.RANDOM.tmp` beside their target (`temp_files` finds leftovers)."""


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = TEMP_SUFFIX) -> Iterator[Path]:
    """Yields a temp path beside `path`; when the block succeeds the temp file is flushed to disk
    and becomes `path` (one rename, readable by all, itself flushed), when it fails the temp file
    is removed. A crash in between leaves either the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TEMP_PREFIX}{path.stem}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        _fsync(tmp, os.O_RDONLY)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # the rename itself; some network filesystems cannot sync a directory
        _fsync(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _fsync(path: str | Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_files(directory: Path) -> list[Path]:
    """Temp files `atomic_path` left in `directory` (a process killed between write and rename)."""
    return sorted(p for p in directory.glob(f"{TEMP_PREFIX}*{TEMP_SUFFIX}") if p.is_file())


def write_text_atomic(path: str | Path, text: str) -> None:
    """Writes a text file through a temp file and a rename."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def probe_writable(directory: Path) -> None:
    """Creates `directory` if needed and a temp file in it (removed at once); raises OSError if
    either fails, so a write at the end of a long job can be checked at its start."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass
