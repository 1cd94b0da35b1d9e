"""The teacher of a distilled policy (`phalanx train TASK --teacher CKPT`): a trained policy of a
task that drives the same robot, acting on its own task's observations, which the student's env
computes beside its own from the same state (the `TEACHER_GROUP` observation group)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from phalanx.core.cfg_data import to_data
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ObsTermCfg, TaskCfg
from phalanx.envs.stored_cfg import checkpoint_env_cfg
from phalanx.rl.ppo import TEACHER_GROUP
from phalanx.training.checkpoint import PLAY_KEYS, load_checkpoint
from phalanx.training.frozen_policy import ActorFactory, checkpoint_actor
from phalanx.training.run_paths import checkpoint_file


@dataclass
class Teacher:
    """A loaded teacher: where it came from, the observations it acts on, its frozen actor, the
    log standard deviation it explored with (the student starts with it) and its env's action
    clip (None: none)."""

    path: str
    observations: dict[str, ObsTermCfg]
    actor: ActorFactory
    log_std: torch.Tensor
    clip: float | None

    def applied(self, obs_dim: int, action_dim: int, device: torch.device, seed: int, margin: float) -> nn.Module:
        """Its frozen actor, its actions as its env applies them (`AppliedActions`): clamped to the
        clip widened by `margin` of its standard deviations (`distill.target_margin`)."""
        actor = self.actor(obs_dim, action_dim, device, seed)
        if self.clip is None:
            return actor
        return AppliedActions(actor, self.clip + margin * self.log_std.detach().to(device).exp())


class AppliedActions(nn.Module):
    """A teacher's actor whose actions are those its env applies: clamped to [-bound, bound]
    (`env.actions.clip`, per action possibly widened). A trained policy's means often lie far
    beyond the clip, where every value acts alike; the student learns the action, not how far past
    the clip the teacher's mean went, except as far as its exploration noise can tell."""

    def __init__(self, actor: nn.Module, bound: torch.Tensor):
        super().__init__()
        self.actor = actor
        self.register_buffer("bound", bound)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(obs).clamp(-self.bound, self.bound)


def load_teacher(given: str, student: TaskCfg, packages: Collection[str]) -> Teacher:
    """The teacher `--teacher` names (a checkpoint or a run directory), checked to fit `student`:
    the same robot model, actions and control rate, and the commands its observations read."""
    path = str(Path(checkpoint_file(given, student.name, "teacher")).resolve())
    state = load_checkpoint(path, None, PLAY_KEYS)
    source = f"--teacher {path}"
    env = checkpoint_env_cfg(state, source, packages)
    mismatch = _mismatch(env, student)
    if mismatch:
        trained = f"{path} was trained on {state['task']!r}"
        raise ConfigError(f"{trained}, {mismatch}: it cannot teach {student.name!r}", "teacher")
    log_std = state["policy"].get("log_std")
    if not isinstance(log_std, torch.Tensor):
        raise ConfigError(f"{path}: its policy has no log_std (not written by phalanx train)", "teacher")
    return Teacher(path, env.observations["policy"], checkpoint_actor(state, source), log_std, env.actions.clip)


def _mismatch(teacher: TaskCfg, student: TaskCfg) -> str | None:
    """What keeps a teacher trained in env `teacher` from acting in `student`, in words; None if nothing."""
    if teacher.model != student.model:
        return f"another robot model ({teacher.model}, the student's {student.model})"
    if to_data(teacher.actions) != to_data(student.actions):
        return "with other actions (env.actions differ)"
    if (teacher.sim.dt, teacher.sim.decimation) != (student.sim.dt, student.sim.decimation):
        return "at another control rate (env.sim.dt or env.sim.decimation differ)"
    for name, command in teacher.commands.items():
        if to_data(command) != to_data(student.commands.get(name)):
            return f"with a command {name!r} that the student's env does not give alike (env.commands.{name})"
    return None


def with_teacher_observations(student: TaskCfg, teacher: Teacher) -> TaskCfg:
    """`student` with the teacher's observations as the `TEACHER_GROUP` group (as it is where a
    resumed student's env already has them)."""
    group = student.observations.get(TEACHER_GROUP)
    if group is not None:
        if to_data(group) != to_data(teacher.observations):
            raise ConfigError(
                f"the env already has a {TEACHER_GROUP!r} observation group, not this teacher's ({teacher.path})",
                f"env.observations.{TEACHER_GROUP}",
            )
        return student
    return dataclasses.replace(student, observations=student.observations | {TEACHER_GROUP: teacher.observations})
