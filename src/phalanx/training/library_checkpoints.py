"""The checkpoints of a run trained with another library (`--trainer rsl_rl|rl_games|skrl|sb3`):
in that library's own format, which phalanx does not read (`play`, `export`, `--resume`, `--teacher`). Which
library wrote a run's, and how that library loads them, for the one line that says so."""

from __future__ import annotations

import json
from pathlib import Path

LOADED_WITH = {
    "rsl_rl": "rsl_rl's OnPolicyRunner(...).load(PATH), then runner.export_policy_to_onnx(...)",
    "rl_games": "rl_games' Runner(...).create_player(), then player.restore(PATH)",
    "skrl": "the skrl agent's agent.load(PATH)",
    "sb3": "stable_baselines3.PPO.load(PATH)",
}
"""How each library loads its checkpoints (the adapters in phalanx.wrappers build its runner or
agent for a task: e.g. phalanx.wrappers.rsl_rl.runner_cfg)."""


def library_of(path: Path) -> str | None:
    """The library that trained the run holding `path` (a run directory, or a file anywhere under
    its checkpoints/), from the run's config.json; None for phalanx's own runs and other files."""
    for run_dir in [path, *path.parents][:4]:
        config = run_dir / "config.json"
        if config.is_file():
            try:
                trainer = json.loads(config.read_text()).get("trainer")
            except (ValueError, OSError, AttributeError):
                return None
            return trainer if trainer in LOADED_WITH else None
    return None


def not_phalanxs(path: Path, trainer: str) -> str:
    """The line for a checkpoint of `trainer`'s."""
    return (
        f"{path} is from a run trained with --trainer {trainer}, whose checkpoints are {trainer}'s own; "
        f"phalanx reads its own (play, export, --resume, --teacher; load this one with {LOADED_WITH[trainer]})"
    )
