"""Checkpoints written atomically and read back with checks that speak to the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from phalanx.errors import ConfigError
from phalanx.files import atomic_path


class CheckpointError(ConfigError):
    """A checkpoint that is missing, unreadable or belongs to another task."""


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Writes `state` through a temp file and a rename: a crash never leaves half a checkpoint."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


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
