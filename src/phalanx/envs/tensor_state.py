"""The per-env state an object keeps in tensors, saved and restored by name: the default
`state_dict` of terms and of the terrain scene, and the checked copy every env part loads with."""

from __future__ import annotations

from typing import Any

import torch

from phalanx.core.errors import ConfigError


def tensor_state(obj: Any) -> dict[str, torch.Tensor]:
    """Copies of `obj`'s tensor attributes, also those of plain objects it holds (e.g. a sensor)
    as "object.attribute"."""
    found = {}
    for name, value in vars(obj).items():
        if isinstance(value, torch.Tensor):
            found[name] = value.clone()
        elif hasattr(value, "__dict__") and not isinstance(value, type | torch.nn.Module):
            found.update({f"{name}.{k}": v.clone() for k, v in vars(value).items() if isinstance(v, torch.Tensor)})
    return found


def load_tensor_state(obj: Any, state: dict[str, torch.Tensor]) -> None:
    """Copies a `tensor_state` back into `obj`'s tensors, in place."""
    for dotted, value in state.items():
        target = obj
        for part in dotted.split("."):
            target = getattr(target, part)
        target.copy_(value)


def load_checked(live: dict[str, torch.Tensor], saved: dict[str, Any], where: str) -> None:
    """Copies `saved[name]` into each of `live`'s tensors in place, after checking that every one
    is there with the same shape (a checkpoint of another task or version is refused by name)."""
    missing = [name for name in live if name not in saved]
    if missing:
        raise ConfigError(f"--resume: the checkpoint's env state lacks {where}{missing} (written by an older phalanx)")
    for name, tensor in live.items():
        here, there = tuple(tensor.shape), tuple(saved[name].shape)
        if here != there:
            raise ConfigError(
                f"--resume: the checkpoint's env state has {where}{name} of shape {there}, this task makes {here}"
            )
    for name, tensor in live.items():
        tensor.copy_(saved[name])
