"""Selecting model elements (joints, geoms, actuators) by regular expression."""

from __future__ import annotations

import re

import torch


def matching_indices(pattern: str, names: list[str], field: str, noun: str) -> list[int]:
    """Indices of the names that fully match `pattern`; none is an error naming `field`."""
    ids = [i for i, name in enumerate(names) if re.fullmatch(pattern, name)]
    if not ids:
        raise ValueError(f"{field} {pattern!r} matches no {noun}; the model has {names}")
    return ids


def matching_ids(pattern: str, names: list[str], field: str, noun: str, device: torch.device) -> torch.Tensor:
    """`matching_indices` as a long tensor on `device`."""
    return torch.tensor(matching_indices(pattern, names, field, noun), dtype=torch.long, device=device)
