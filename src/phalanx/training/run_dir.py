"""A training run's directory, owned by one run at a time (an advisory `flock` on run.lock: the
kernel drops it when its process ends however it ends, so two processes cannot both win and a dead
one's lock is simply taken over):

    run.lock              while a process trains here: its pid, host and start time
    config.json           the resolved training config, written once every check has passed
    model/                a user's model file as MuJoCo flattened it, with the files it names
    metrics.jsonl         one JSON object per iteration
    checkpoints/          model_last.pt and model_N.pt
    events.out.tfevents.* TensorBoard
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
from datetime import datetime
from pathlib import Path

from rich.console import Console

from phalanx.core.errors import ConfigError
from phalanx.core.files import temp_files, write_text_atomic
from phalanx.sim.model_files import write_model_dir

LOCK_NAME = "run.lock"


class RunDir:
    """Opens (creates) `path` for one training process: refuses a file, an unwritable path or a
    directory another live process trains in; removes temp files an interrupted write left.
    Use as a context manager: on exit the lock is released, and a directory this run created is
    removed again if the run failed before writing anything into it."""

    def __init__(self, path: Path, console: Console):
        self.path, self.console = path, console
        self.checkpoints = path / "checkpoints"
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path} is a file, not a directory", "run_dir")
        self._created = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"cannot create {path} ({error.strerror})", "run_dir") from None
        self._lock_fd: int | None = None
        self._lock()
        stale = [*temp_files(path), *temp_files(self.checkpoints)]
        for tmp in stale:
            tmp.unlink(missing_ok=True)
        if stale:
            console.print(f"run dir: removed {len(stale)} temp file(s) an interrupted write left")

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close()
        if exc_type is not None and self._created:
            with contextlib.suppress(OSError):  # not empty: the run wrote something, keep it
                self.path.rmdir()

    def _lock(self) -> None:
        lock = self.path / LOCK_NAME
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                raise ConfigError(f"cannot write into {self.path} ({error.strerror})", "run_dir") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_all(fd) or "a process that has not written its pid yet"
                os.close(fd)
                raise ConfigError(
                    f"{self.path} is in use by another phalanx train ({holder}); wait for it to end, stop it, "
                    "or choose another --run-dir",
                    "run_dir",
                ) from None
            except OSError as error:  # some network filesystems have no locks
                os.close(fd)
                if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
                self.console.print(
                    f"[yellow]warning:[/yellow] run dir: {self.path} cannot be locked on this filesystem "
                    f"({error.strerror}): a second run in it would not be detected"
                )
                return
            if _same_file(fd, lock):
                break
            os.close(fd)  # the holder removed the file between our open and lock: try the new one
        previous = _read_all(fd)
        if previous:
            self.console.print(f"run dir: took over the lock of {previous}, which is no longer running")
        started = datetime.now().isoformat(sep=" ", timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        """Releases the lock (removes the file while still holding it, so no one locks a stale inode)."""
        if self._lock_fd is not None:
            (self.path / LOCK_NAME).unlink(missing_ok=True)
            os.close(self._lock_fd)
            self._lock_fd = None

    def previous_run(self) -> list[str]:
        """The files that show a run already used this directory."""
        found = [name for name in ("config.json", "metrics.jsonl") if (self.path / name).is_file()]
        return found + [f"checkpoints/{p.name}" for p in sorted(self.checkpoints.glob("*.pt"))]

    def check_owner(self, resume: Path | None, resume_last: bool) -> None:
        """Refuses to start a second run in a directory that holds one: allowed are an empty
        directory, a resume from one of its own checkpoints, and `--resume last` when it has none
        yet (a restart of a run that stopped before its first checkpoint)."""
        found = self.previous_run()
        own = resume is not None and resume.resolve().parent == self.checkpoints.resolve()
        if not found or own or (resume is None and resume_last):
            return
        shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
        what = "a run" if resume is None else f"another run than {resume}'s"
        raise ConfigError(
            f"{self.path} already holds {what} ({shown}); continue it with --resume last, or choose a new --run-dir",
            "run_dir",
        )

    def begin(self, iteration: int, config: dict, world_size: int, model_files: dict[str, bytes] | None) -> None:
        """Called once every check has passed: cuts metrics.jsonl back to the iterations before
        `iteration` (where training continues), writes `model_files` (`sim.model_files`) into
        model/ and config.json: `config` and the job's `world_size` (its processes: `num_envs`
        is per process)."""
        if model_files:
            write_model_dir(model_files, self.path / "model")
        metrics = self.path / "metrics.jsonl"
        if metrics.is_file():
            kept = [line for line in metrics.read_text().splitlines() if _iteration(line) < iteration]
            write_text_atomic(metrics, "".join(line + "\n" for line in kept))
        write_text_atomic(self.path / "config.json", json.dumps({**config, "world_size": world_size}, indent=2) + "\n")


def _iteration(line: str) -> float:
    """The iteration of a metrics.jsonl line; inf for a line torn by a crash (it is dropped)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return float("inf")
    iteration = row.get("iteration") if isinstance(row, dict) else None
    return iteration if isinstance(iteration, int | float) and not isinstance(iteration, bool) else float("inf")


def _read_all(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False
