"""The per-env state an object keeps in tensor attributes, saved and restored by name (the
default `state_dict` of terms and of the terrain scene)."""

from __future__ import annotations

from typing import Any

import torch


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
