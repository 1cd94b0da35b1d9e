"""Writing files so that a crash never leaves half of one behind."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from phalanx.core.errors import ConfigError

TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"
"""Temp files are named `.STEM.RANDOM.tmp` beside their target (`temp_files` finds leftovers)."""


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = TEMP_SUFFIX) -> Iterator[Path]:
    """Yields a temp path beside `path`; when the block succeeds the temp file is flushed to disk
    and becomes `path` (one rename, readable by all, itself flushed), when it fails the temp file
    is removed. A crash in between leaves either the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TEMP_PREFIX}{path.stem}.", suffix=suffix)
    except OSError as error:
        raise_if_out_of_space(error, path)
        raise
    os.close(fd)
    try:
        yield Path(tmp)
        _fsync(tmp, os.O_RDONLY)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, Exception):
            raise_if_out_of_space(error, path)
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


NAME_MAX, PATH_MAX = 255, 4096
"""The longest file name and path Linux filesystems take (bytes)."""
ROOM = 64
"""Bytes a run directory's own files add to its path (checkpoints/.model_last.XXXXXXXX.tmp, ...)."""


def check_path_length(field: str, path: str | Path) -> None:
    """Raises ConfigError naming `field` if a name in `path` or the whole path is too long for the
    filesystem once phalanx's own files are added."""
    for name in Path(path).parts:
        if len(os.fsencode(name)) > NAME_MAX:
            raise ConfigError(f"a name in it is {len(os.fsencode(name))} bytes long; at most {NAME_MAX}", field)
    total = len(os.fsencode(str(Path(path).absolute())))
    if total + ROOM > PATH_MAX:
        raise ConfigError(f"the path is {total} bytes long; at most {PATH_MAX - ROOM}", field)


def probe_writable(directory: Path) -> None:
    """Creates `directory` if needed and a temp file in it (removed at once); raises OSError if
    either fails, so a write at the end of a long job can be checked at its start."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass


class OutOfSpaceError(ConfigError):
    """A write failed because its filesystem is full (or the user's quota is spent)."""


FULL = (errno.ENOSPC, errno.EDQUOT)
ALMOST_FULL_BYTES = 1 << 20
"""Free space under which a failed write is put down to a full disk: torch.save reports one as a
RuntimeError ("unexpected pos ...") without the system's error."""


def raise_if_out_of_space(error: BaseException, path: Path) -> None:
    """Raises OutOfSpaceError (one line: the directory, what failed to be written, that the file
    there before is intact) if `error`, writing `path`, came from a full filesystem."""
    chain, cause = [], error
    while cause is not None and len(chain) < 16:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    full = any(isinstance(e, OSError) and e.errno in FULL for e in chain)
    if not full and not any(isinstance(e, OSError) for e in chain):
        with contextlib.suppress(OSError):
            full = shutil.disk_usage(path.parent).free < ALMOST_FULL_BYTES
    if full:
        raise OutOfSpaceError(
            f"no space left on {path.parent} to write {path.name}; free some and run again "
            "(what was there before is intact; a run continues with --resume last)"
        ) from None
