"""Reading batched state cheaply: column indexers (joints, dofs) and per-row checks."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def columns(indices: Sequence[int], device: torch.device) -> slice | torch.Tensor:
    """An indexer that picks `indices` along one axis: a slice when they are consecutive and
    ascending, so that `x[:, columns]` is a view (no copy, no kernel on the GPU), else a long
    tensor (a gather). Only for reading: writing through a gathered copy would be lost."""
    indices = [int(i) for i in indices]
    start = indices[0] if indices else 0
    if indices == list(range(start, start + len(indices))):
        return slice(start, start + len(indices))
    return torch.tensor(indices, dtype=torch.long, device=device)


def nonfinite_rows(value: torch.Tensor) -> torch.Tensor:
    """(rows,) bool: the rows of `value` (rows, ...) that hold a NaN or an infinity. `x - x` is
    NaN exactly there, and NaN is the one value not equal to itself: three kernels, where
    `isfinite(...).all()` takes five (isfinite is eq, abs, ne and mul) and a negation."""
    diff = value - value
    return (diff != diff).flatten(1).any(dim=1)
