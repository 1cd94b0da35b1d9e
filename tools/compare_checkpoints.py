"""Two phalanx checkpoints compared: per entry of the training state (policy, optimizer,
normalizers, every rank's env state and generators), bitwise equal or the largest difference and
where. The config and the elapsed time (where and when it ran) are not compared.

    python tools/compare_checkpoints.py A.pt B.pt
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import torch

from phalanx.training.deflated import inflate_envs

STATE = ("iteration", "frames", "policy", "obs_norm", "critic_norm", "ppo", "learner", "ranks")


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every leaf of nested dicts, lists and tuples."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(tree, list | tuple):
        for i, value in enumerate(tree):
            yield from leaves(value, f"{path}[{i}]")
    else:
        yield path, tree


def difference(a: Any, b: Any) -> float | None:
    """None where bitwise equal, else the largest absolute difference (inf where not comparable)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return float("inf")
        if torch.equal(a, b) or (
            a.is_floating_point() and torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
        ):
            return None
        return (a.double() - b.double()).abs().nan_to_num(float("inf")).max().item()
    return None if a == b else float("inf")


def main(path_a: str, path_b: str) -> int:
    a, b = (inflate_envs(torch.load(p, weights_only=True, map_location="cpu")) for p in (path_a, path_b))
    same = True
    for key in [k for k in STATE if k in a or k in b]:
        if key not in a or key not in b:
            print(f"{key}: only in {'A' if key in a else 'B'}")
            same = False
            continue
        left, right = dict(leaves(a[key])), dict(leaves(b[key]))
        if left.keys() != right.keys():
            print(f"{key}: other entries ({len(left)} against {len(right)})")
            same = False
            continue
        diffs = [(d, path) for path in left if (d := difference(left[path], right[path])) is not None]
        if not diffs:
            print(f"{key}: bitwise equal ({len(left)} entries)")
            continue
        same = False
        worst, where = max(diffs)
        print(f"{key}: {len(diffs)} of {len(left)} entries differ, the most by {worst:.3g} ({where})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
