"""The `phalanx` command line: `phalanx list` (training and benchmarks come with their issues)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import tyro
from rich.console import Console
from rich.table import Table


@dataclass
class ListCmd:
    """Print the registered tasks: observation dims, action dim, physics dt, decimation."""


def list_tasks(console: Console) -> None:
    """Builds each task once on the CPU with one env (no physics step) to read its dimensions."""
    from phalanx.envs import TASKS, make

    table = Table(title="phalanx tasks", title_justify="left")
    for column in ("task", "observations", "actions", "physics dt", "decimation", "episode", "description"):
        table.add_column(column)
    for name in TASKS:
        env = make(name, num_envs=1, device="cpu", verbose=False)
        obs = ", ".join(
            f"{group} {shape[0] if len(shape) == 1 else shape}" for group, shape in env.observation_spec.items()
        )
        table.add_row(
            name,
            obs,
            str(env.action_dim),
            f"{env.sim.dt * 1e3:.2f} ms",
            str(env.cfg.sim.decimation),
            f"{env.cfg.episode_length_s:g} s",
            env.cfg.description,
        )
    console.print(table)


def configure_warp() -> None:
    """Keeps Warp's start-up banner and per-module compile lines out of the console."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING


def main(argv: list[str] | None = None) -> int:
    commands = {"list": ListCmd}
    cmd = tyro.extras.subcommand_cli_from_dict(
        commands, args=argv, prog="phalanx", description="GPU-resident robot RL on MuJoCo Warp."
    )
    configure_warp()
    console = Console(width=max(160, Console().width))
    if isinstance(cmd, ListCmd):
        list_tasks(console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
