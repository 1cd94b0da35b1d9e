"""Checkpoints written atomically and read back with checks that speak to the user."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from phalanx.errors import ConfigError


class CheckpointError(ConfigError):
    """A checkpoint that is missing, unreadable or belongs to another task."""


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Writes `state` to a temp file beside `path`, then renames it: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | Path, task: str) -> dict[str, Any]:
    """Loads a phalanx checkpoint (onto the CPU) and checks it was made for `task`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint: no file {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:  # noqa: BLE001 (any unpickling failure means the same to the user)
        raise CheckpointError(f"checkpoint: {path} is not a readable phalanx checkpoint ({error})") from None
    if not isinstance(state, dict) or "task" not in state:
        raise CheckpointError(f"checkpoint: {path} is not a phalanx checkpoint")
    if state["task"] != task:
        raise CheckpointError(f"checkpoint: {path} was trained on task {state['task']!r}, not {task!r}")
    return state


def write_text_atomic(path: Path, text: str) -> None:
    """Writes a text file through a temp file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600
    os.replace(tmp, path)
