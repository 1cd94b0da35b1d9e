"""Turning a user's device string into a torch device, with errors that say what is allowed."""

from __future__ import annotations

import re

import torch

from phalanx.core.errors import ConfigError

_ALLOWED = "'cpu', 'cuda' or 'cuda:K'"


def default_device() -> str:
    """'cuda' when torch sees a GPU, else 'cpu'."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Validates `device` and returns it with an explicit CUDA index.

    Raises:
        ConfigError: the string is not one of 'cpu', 'cuda', 'cuda:K', or names a GPU that is not there.
    """
    if device is None:
        device = default_device()
    text = str(device)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise ConfigError(f"device: got {text!r}; allowed: {_ALLOWED}")
    if text == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"device: got {text!r}, but torch sees no CUDA GPU on this machine; use 'cpu'")
    index = int(text.split(":")[1]) if ":" in text else torch.cuda.current_device()
    count = torch.cuda.device_count()
    if index >= count:
        raise ConfigError(f"device: got {text!r}, but this machine has {count} GPU(s): cuda:0..cuda:{count - 1}")
    return torch.device("cuda", index)
