"""Start-up tables of a task's active terms, in the manner of Isaac Lab's managers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from phalanx.core.console import wide_console

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def _table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="right" if i == 0 else "left")
    for i, row in enumerate(rows):
        table.add_row(str(i), *row)
    return table


def sim_summary(env: TaskEnv) -> str:
    """One line: task, envs, device, physics and env dt, episode length, buffer sizes."""
    sim = env.sim
    low = env.cfg.actions.low_level or env.cfg.actions.controller
    kind = "low-level" if env.cfg.actions.controller is None else "control"
    steps = f"{sim.cfg.decimation}" if low is None else f"{sim.cfg.decimation} x {low.decimation} {kind} steps"
    return (
        f"{env.cfg.name}: {env.num_envs} envs on {env.device} | physics dt {sim.dt * 1e3:.2f} ms x "
        f"{steps} = env dt {env.step_dt * 1e3:.2f} ms | episode {env.max_episode_length} steps "
        f"({env.cfg.episode_length_s:g} s) | buffers per env: {sim.nconmax} contacts, {sim.njmax} constraint rows"
    )


def print_term_tables(env: TaskEnv, console: Console | None = None) -> None:
    """Prints the sim summary and one table per term section (observations per group, actions,
    rewards, terminations, events, commands, metrics, curriculum)."""
    console = console or wide_console()
    cfg = env.cfg
    console.print(f"[bold]phalanx[/bold] {sim_summary(env)}")
    for group, shapes in env.obs_term_shapes.items():
        terms = cfg.observations[group]
        rows = [
            [name, str(shape), f"{t.scale:g}", str(t.clip or ""), f"{t.noise:g}" if t.noise else ""]
            for name, shape in shapes.items()
            for t in [terms[name]]
        ]
        title = f"Observations '{group}' shape {env.observation_spec[group]}"
        console.print(_table(title, ["#", "term", "shape", "scale", "clip", "noise"], rows))
    _print_actions(env, console)
    reward_note = f" x env dt {env.step_dt:g} s" if cfg.reward_scale_by_dt else ""
    console.print(
        _table(
            f"Rewards (weight{reward_note})",
            ["#", "term", "weight"],
            [[name, f"{t.weight:g}"] for name, t in cfg.rewards.items()],
        )
    )
    console.print(
        _table(
            "Terminations", ["#", "term", "time out"], [[name, str(t.time_out)] for name, t in cfg.terminations.items()]
        )
    )
    if cfg.events:
        console.print(_table("Events", ["#", "term", "mode"], [[name, e.mode] for name, e in cfg.events.items()]))
    if cfg.commands:
        rows = [
            [name, str(tuple(env.command(name).shape[1:])), "{:g}-{:g} s".format(*c.resampling_time_range_s)]
            for name, c in cfg.commands.items()
        ]
        console.print(_table("Commands", ["#", "term", "shape", "resampled after"], rows))
    if cfg.metrics:
        rows = [[name, "last step" if m.final else "episode mean"] for name, m in cfg.metrics.items()]
        console.print(_table("Metrics", ["#", "term", "logged"], rows))
    if cfg.curriculum:
        console.print(_table("Curriculum (at reset)", ["#", "term"], [[name] for name in cfg.curriculum]))


def _delay_note(actions) -> str:
    low, high = actions.delay_range
    return "" if high == 0 else f", delayed {low}-{high} env steps"


def _print_actions(env: TaskEnv, console: Console) -> None:
    """The actions' table: the actuators they drive, or the command of the low level that does."""
    actions = env.cfg.actions
    if actions.controller is not None:
        controller = actions.controller
        title = (
            f"Actions (dim {env.action_dim}): the command of {controller.func.__name__} = part scale x "
            f"{actions.scale:g} x clip(action), {controller.decimation} control steps per env step"
        )
        rows = [[name, str(width), f"{scale:g}"] for name, width, scale in env.low_level.command_layout]
        console.print(_table(title, ["#", "part", "dim", "scale"], rows))
        _print_gripper(actions, console)
        names = ", ".join(env.sim.actuator_names[i] for i in env.low_level.actuator_ids.tolist())
        console.print(f"The controller drives the actuators {names}")
        return
    ids = env.joints.actuator_ids.tolist()
    names = [env.sim.actuator_names[i] for i in ids]
    title = f"Actions (dim {env.action_dim}, ctrl = {_ctrl(actions)}{_delay_note(actions)})"
    if actions.low_level is not None:
        low = actions.low_level
        source = low.checkpoint or "untrained: no checkpoint given"
        console.print(
            f"Actions (dim {env.action_dim}): command {low.command!r} = {actions.scale:g} * clip(action) "
            f"of a frozen {low.task} policy ({source}), {low.decimation} low-level steps per env step"
        )
        actions = env.low_level.actions
        title = f"Low-level actions (dim {env.joints.dim}, ctrl = {_ctrl(actions)})"
    clip = f"{actions.clip:g}" if actions.clip else ""
    rows = [[name, "1", f"{actions.scale:g}", clip, _ctrlrange(env, i)] for name, i in zip(names, ids, strict=True)]
    console.print(_table(title, ["#", "actuator", "dim", "scale", "clip", "ctrlrange"], rows))
    _print_gripper(env.cfg.actions, console)


def _ctrl(actions) -> str:
    """The actuators' control from the actions, as export's policy.json states it."""
    if actions.ctrl_range:
        scaled = "middle + half-range * scale * clip(action)"
    else:
        scaled = f"{'gear x joint position' if actions.relative else 'offset'} + scale * clip(action)"
    return f"clamp({scaled}, ctrlrange)"


def _ctrlrange(env: TaskEnv, actuator: int) -> str:
    """An actuator's control range as the simulator clamps to it, "none" where it does not."""
    mjm = env.sim.mjm
    low, high = mjm.actuator_ctrlrange[actuator]
    return f"[{low:g}, {high:g}]" if mjm.actuator_ctrllimited[actuator] else "none"


def _print_gripper(actions, console: Console) -> None:
    gripper = actions.gripper
    if gripper is not None:
        console.print(
            f"The last action opens the gripper {gripper.actuator!r} (ctrl {gripper.open:g}) when >= 0 "
            f"and closes it (ctrl {gripper.closed:g}) when < 0"
        )
