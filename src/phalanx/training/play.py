"""Running a trained policy: load it from a checkpoint, act deterministically, collect episode
statistics, optionally record env 0."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

import torch

from phalanx.core.errors import ConfigError
from phalanx.core.stops import raise_swallowed_stop
from phalanx.envs.cfg import TaskCfg
from phalanx.envs.mdp.observations import colour_first
from phalanx.envs.task_env import TaskEnv
from phalanx.sim.video import EnvRecorder
from phalanx.training.export import deployed_policy

Act = Callable[[dict[str, torch.Tensor]], torch.Tensor]
"""A policy: observations (by group) to actions."""


def load_actor(state: dict[str, Any], env: TaskEnv) -> Act:
    """The checkpoint's deterministic policy (the module `phalanx export` writes): the env's
    observation groups -> mean actions."""
    policy = deployed_policy(state, env.observation_spec, env.action_dim).to(env.device)
    image_group = state["config"]["policy"].get("image_group")

    def act(obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return policy(obs["policy"], *([] if image_group is None else [obs[image_group]]))

    return act


UNTRAINED = ("zero", "random")


@dataclass
class Played:
    """What `play` and `view` run: the checkpoint (resolved) and its contents, or with `--policy`
    its kind (zero, random) and no checkpoint (""); and the env config to play in (the task's play
    variant of the trained one)."""

    checkpoint: str
    state: dict[str, Any] | None
    env_cfg: TaskCfg
    policy: str | None = None

    def actor(self, env: TaskEnv, seed: int) -> tuple[Act, str | None]:
        """The policy to act with, and the observation group of images it reads (None: none)."""
        if self.state is None:
            return untrained_policy(self.policy, env, seed), None
        return load_actor(self.state, env), self.state["config"]["policy"].get("image_group")


def played(task: str, checkpoint: str, policy: str | None, low_level_checkpoint: str | None = None) -> Played:
    """The run `--checkpoint` names (a checkpoint, a run directory or 'last'), or with `--policy
    zero|random` none: the task's registered env. Bad combinations raise ConfigError."""
    from phalanx.envs.stored_cfg import checkpoint_env_cfg
    from phalanx.training.checkpoint import load_checkpoint
    from phalanx.training.registry import env_cfg, play_env_cfg, term_packages
    from phalanx.training.run_paths import checkpoint_file

    if policy is None:
        checkpoint = checkpoint_file(checkpoint, task)
        state = load_checkpoint(checkpoint, task)
        trained = checkpoint_env_cfg(state, f"--checkpoint {checkpoint}", term_packages())
    elif policy not in UNTRAINED:
        raise ConfigError(f"got {policy!r}; allowed: {', '.join(UNTRAINED)}", "policy")
    elif checkpoint:
        raise ConfigError(f"--checkpoint: --policy {policy} plays without a trained run; give one or the other")
    else:
        state, trained = None, env_cfg(task)
    cfg = play_env_cfg(task, trained)
    set_low_level_checkpoint(cfg, task, low_level_checkpoint)
    return Played(checkpoint, state, cfg, policy)


def set_low_level_checkpoint(cfg: TaskCfg, task: str, checkpoint: str | None) -> None:
    """`--low-level-checkpoint` for a hierarchical task's env config (None: keep the trained one)."""
    if checkpoint is not None:
        if cfg.actions.low_level is None:
            raise ConfigError(f"task {task!r} has no low-level policy", "low_level_checkpoint")
        cfg.actions.low_level.checkpoint = checkpoint


def untrained_policy(kind: str, env: TaskEnv, seed: int) -> Act:
    """`kind` 'zero': every action 0 (each actuator at its offset); 'random': each action uniform in
    [-1, 1], drawn anew every step from a generator seeded with `seed`."""
    shape = (env.num_envs, env.action_dim)
    if kind == "zero":
        return lambda obs: torch.zeros(shape, device=env.device)
    generator = torch.Generator(device=env.device).manual_seed(seed)
    return lambda obs: torch.rand(shape, generator=generator, device=env.device) * 2 - 1


@dataclass
class Episodes:
    """Episodes played: the return, length and the task's metrics of each. `running`: the
    episodes still running when the play ended, with their return, length and metrics so far."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    running: Episodes | None = None

    def add(self, episode: dict[str, Any], which: torch.Tensor) -> None:
        """The episodes of `which` envs, from a step's `extras["episode"]`."""
        self.returns += episode["return"][which].tolist()
        self.lengths += episode["length"][which].tolist()
        for name, values in episode["metrics"].items():
            self.metrics.setdefault(name, []).extend(values[which].tolist())

    def summary(self) -> str:
        """Means over the finished episodes, then over those still running, e.g. "mean return
        296.30, mean episode length 300.0, goal_reached 0.82; 4 still running: mean return ..."."""
        line = self._means_line() if self.returns else "no episode finished"
        if self.running is not None and self.running.returns:
            line += f"; {len(self.running.returns)} still running: {self.running._means_line()}"
        return line

    def _means_line(self) -> str:
        parts = [f"mean return {mean(self.returns):.2f}", f"mean episode length {mean(self.lengths):.1f}"]
        return ", ".join(parts + [f"{name} {mean(values):.3g}" for name, values in self.metrics.items()])

    def means(self) -> dict[str, Any]:
        """The episodes' count and means (None where no episode finished), as JSON values; those
        of the episodes still running under "running"."""
        means = {
            "episodes": len(self.returns),
            "mean_return": _mean(self.returns),
            "mean_episode_length": _mean(self.lengths),
            "metrics": {name: _mean(values) for name, values in self.metrics.items()},
        }
        return means if self.running is None else means | {"running": self.running.means()}


def _mean(values: list[float] | list[int]) -> float | None:
    return mean(values) if values else None


def run_episodes(
    env: TaskEnv,
    act: Act,
    steps: int,
    recorder: EnvRecorder | None = None,
    image_group: str | None = None,
) -> Episodes:
    """Steps every env `steps` times from a reset and collects the episodes that finished, then
    those still running (host reads every step: for evaluation, not training). A metric of an
    episode still running is its value so far (`MetricTermCfg`: its mean over the steps so far,
    or its last value). The recorder's frames show, beside the scene, the `image_group`
    observation the policy acts on."""
    episodes = Episodes(metrics={name: [] for name in env.cfg.metrics})
    colour = image_group is not None and colour_first(env.cfg.observations[image_group])
    obs = env.reset()
    episode = None
    for _ in range(steps):
        raise_swallowed_stop()
        if recorder is not None:
            recorder.capture(None if image_group is None else obs[image_group][recorder.env_id], colour)
        obs, _, _, _, extras = env.step(act(obs))
        episode = extras["episode"]
        episodes.add(episode, episode["done"])
    episodes.running = Episodes(metrics={name: [] for name in env.cfg.metrics})
    if episode is not None:
        episodes.running.add(episode, ~episode["done"])
    return episodes
