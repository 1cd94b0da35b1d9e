"""`phalanx view TASK`: a task's envs, acting by a trained policy or zero or random actions, shown
live on a web page (viser) while they run, in real time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from rich.console import Console

from phalanx.core.errors import ConfigError, check_int
from phalanx.core.stops import raise_swallowed_stop
from phalanx.flags import parse_flags, task_and_flags
from phalanx.viewer.address import announce, check_port, check_serving
from phalanx.viewer.markers import command_markers, host_array
from phalanx.viewer.server import FRAME_S

CURVES_S = 0.25
"""Seconds between two updates of the page's curves."""
RELOAD_S = 5.0
"""Seconds between two looks for a newer checkpoint."""
NO_CONTACTS = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64))
"""Contact points, forces and envs when the page's contact forces are off."""


@dataclass
class ViewCfg:
    """phalanx view: a task's envs on a web page, live: a trained policy, or zero or random actions."""

    task: str
    """The task to show (the checkpoint's task with --checkpoint)."""
    checkpoint: str = ""
    """A checkpoint written by `phalanx train`, a run directory (its model_last.pt), or 'last' (the
    newest model_last.pt under runs/TASK/)."""
    policy: str | None = None
    """'zero' or 'random': act so without a trained run (instead of --checkpoint)."""
    num_envs: int = 16
    """Envs to run (the page shows up to 64 of them)."""
    shown: int = 9
    """Envs the page shows at first (its slider changes it)."""
    host: str = "127.0.0.1"
    """Address to serve on; 127.0.0.1 is this machine only (reach it from a laptop over `ssh -L`),
    0.0.0.0 every network it is on."""
    port: int = 8080
    """Port to serve on (0: any free one)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    seed: int = 0
    """Seeds the env's initial states (and random actions)."""
    steps: int | None = None
    """Env steps to run, then stop; default: until Ctrl-C."""
    realtime: bool = True
    """Step at the task's own pace (env dt per step); --no-realtime: as fast as it goes."""
    low_level_checkpoint: str | None = None
    """Hierarchical tasks (anymal-nav): the low-level policy's checkpoint; default: the one the
    run was trained with."""


def check(cfg: ViewCfg) -> None:
    """Raises ConfigError for the first bad flag, before anything is built."""
    check_int("num_envs", cfg.num_envs)
    check_int("shown", cfg.shown)
    if cfg.steps is not None:
        check_int("steps", cfg.steps)
    check_serving(cfg.port, "port", "phalanx view")


def view(args: list[str], console: Console) -> None:
    """phalanx view: see `ViewCfg`."""
    from phalanx.training.play import played
    from phalanx.training.registry import make
    from phalanx.viewer.server import MAX_SHOWN, Viewer

    task, flags = task_and_flags("view", args, registered=False)
    cfg = parse_flags(ViewCfg, ViewCfg(task=task), flags, f"phalanx view {task}")
    check(cfg)
    check_port(cfg.host, cfg.port)
    run = played(task, cfg.checkpoint, cfg.policy, cfg.low_level_checkpoint)
    env = make(run.env_cfg, num_envs=cfg.num_envs, device=cfg.device, seed=cfg.seed)
    act, _ = run.actor(env, cfg.seed)
    newest = None if run.state is None else NewestPolicy(cfg.checkpoint, task, run.checkpoint, env)
    k = min(cfg.num_envs, MAX_SHOWN)
    start = host_array(env.sim.qpos[:k])
    viewer = Viewer(env.sim.mjm, f"phalanx view {task}", start, cfg.host, cfg.port, cfg.shown, contacts=True)
    try:
        announce(console, cfg.host, viewer.port, "phalanx view")
        policy = viewer.server.gui.add_markdown(f"policy: {run.checkpoint or cfg.policy}")
        _run(env, act, viewer, cfg, k, newest, policy, console)
    finally:
        viewer.stop()


def _run(env, act, viewer, cfg: ViewCfg, k: int, newest: NewestPolicy | None, policy, console: Console) -> None:
    """Steps the envs (in real time unless --no-realtime) and shows them until --steps or Ctrl-C,
    following pause, step and reset, and a newer checkpoint."""
    from phalanx.envs.mdp.observations import colour_first
    from phalanx.sim.video import policy_view
    from phalanx.viewer.contacts import ContactForces
    from phalanx.viewer.server import MAX_ARROWS

    sim, obs = env.sim, env.obs
    contacts = ContactForces(sim, k, MAX_ARROWS)
    images = [group for group, shape in env.observation_spec.items() if len(shape) == 3]
    colour = bool(images) and colour_first(env.cfg.observations[images[0]])
    steps, sim_time, shown_at, curves_at = 0, 0.0, 0.0, 0.0
    start = time.monotonic()
    while cfg.steps is None or steps < cfg.steps:
        raise_swallowed_stop()  # a stop swallowed in start-up (importing viser, building the env)
        if viewer.take_reset():
            obs, sim_time, start = env.reset(), 0.0, time.monotonic()
        if not viewer.paused or viewer.take_step():
            obs, reward, _, _, extras = env.step(act(obs))
            steps, sim_time = steps + 1, sim_time + env.step_dt
            _record(viewer, sim_time, reward, extras["episode"])
        elif viewer.paused:
            start = time.monotonic() - sim_time  # the clock waits with the sim
        now = time.monotonic()
        if now - shown_at >= FRAME_S or viewer.paused:
            viewer.show(
                sim_time, host_array(sim.qpos[:k]), host_array(sim.mocap_pos[:k]), host_array(sim.mocap_quat[:k])
            )
            viewer.markers(command_markers(env, k))
            drawn = contacts.read(int(viewer.shown_slider.value)) if viewer.contacts_box.value else NO_CONTACTS
            viewer.contact_forces(*drawn, contacts.weight)
            if images:
                viewer.image(policy_view(obs[images[0]][0], colour))
            shown_at = now
        if now - curves_at >= CURVES_S:
            viewer.draw_curves()
            curves_at = now
            swapped = newest.poll(console) if newest is not None else None
            if swapped is not None:
                act, policy.content = swapped[0], f"policy: {swapped[1]}"
        if viewer.paused:
            time.sleep(FRAME_S)
        elif cfg.realtime:
            time.sleep(max(0.0, start + sim_time - time.monotonic()))


class NewestPolicy:
    """`--checkpoint` as given, looked at again every `every_s` seconds: a newer checkpoint (the
    run saved again; with a run directory or 'last', a newer run) replaces the policy."""

    def __init__(self, given: str, task: str, current: str, env, every_s: float = RELOAD_S):
        self.given, self.task, self.env, self.every_s = given, task, env, every_s
        self.current = _stamp(current)
        self.checked = time.monotonic()

    def poll(self, console: Console) -> tuple[Callable, str] | None:
        """The newer checkpoint's policy and its description, when there is one to switch to."""
        from phalanx.training.checkpoint import load_checkpoint
        from phalanx.training.play import load_actor
        from phalanx.training.run_paths import checkpoint_file

        if time.monotonic() - self.checked < self.every_s:
            return None
        self.checked = time.monotonic()
        try:
            stamp = _stamp(checkpoint_file(self.given, self.task))
        except (ConfigError, OSError):
            return None
        if stamp == self.current:
            return None
        self.current = stamp
        try:
            state = load_checkpoint(stamp[0], self.task)
            act = load_actor(state, self.env)
        except (ConfigError, RuntimeError, ValueError, KeyError) as error:
            console.print(f"[yellow]warning:[/yellow] kept the policy: {stamp[0]} does not load here ({error})")
            return None
        console.print(f"policy: {stamp[0]} (iteration {state.get('iteration')})")
        return act, f"{stamp[0]} (iteration {state.get('iteration')})"


def _stamp(path: str) -> tuple[str, int]:
    """A checkpoint file and when it was written."""
    return path, Path(path).stat().st_mtime_ns


def _record(viewer, sim_time: float, reward: torch.Tensor, episode: dict) -> None:
    """The step's mean reward, and the return and metrics of the episodes that ended in it."""
    viewer.record("reward per step (mean over envs)", sim_time, float(reward.mean()))
    done = episode["done"]
    if bool(done.any()):
        viewer.record("episode return", sim_time, float(episode["return"][done].float().mean()))
        for name, values in episode["metrics"].items():
            viewer.record(name, sim_time, float(values[done].float().mean()))
