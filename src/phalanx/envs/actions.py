"""An env's actions: cleaned and clipped, then either actuator targets (optionally delayed) or
the command of a low level that drives the actuators itself (a frozen policy or a controller)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ActionCfg, GripperCfg
from phalanx.envs.names import matching_ids
from phalanx.envs.tensor_state import load_checked

if TYPE_CHECKING:
    from phalanx.envs.cfg import ActionController
    from phalanx.envs.low_level import LowLevelPolicy
    from phalanx.envs.task_env import TaskEnv
    from phalanx.sim import Simulator


class JointTargets:
    """The actuators an `ActionCfg` selects, driven as ctrl = offset + span x scaled action (span
    1, or with `ctrl_range` each actuator's half-width); each `drive` steps the physics once
    (`sim.decimation` substeps)."""

    def __init__(self, sim: Simulator, cfg: ActionCfg, device: torch.device):
        self.actuator_ids = matching_ids(cfg.actuators, sim.actuator_names, "actions.actuators:", "actuator", device)
        self.dim = len(self.actuator_ids)
        self.joint_ids = sim.actuator_joint_ids[self.actuator_ids]  # (dim,) into sim joints; -1: not a 1-dof joint
        self.gear = sim.actuator_gear[self.actuator_ids]  # (dim,)
        self.offset = torch.full((self.dim,), cfg.offset, device=device)
        self.span = torch.ones(self.dim, device=device)  # ctrl per unit of scaled action
        self.relative_qposadr = self._relative(sim, cfg) if cfg.relative else None
        if cfg.ctrl_range:
            self._span_ctrl_ranges(sim, cfg)
        elif cfg.use_default_offset:
            if (self.joint_ids < 0).any():
                raise ConfigError("actions.use_default_offset: every driven actuator must drive a 1-dof joint")
            self.offset += sim.default_qpos[sim.joint_qposadr[self.joint_ids]]

    def _relative(self, sim: Simulator, cfg: ActionCfg) -> torch.Tensor:
        """The qpos address of each driven joint, whose position (times the actuator's gear: a
        position actuator's ctrl is in its length units) the targets are relative to."""
        if cfg.offset or cfg.use_default_offset or cfg.ctrl_range:
            raise ConfigError(
                "actions.relative: the joint positions are the offsets; drop offset, use_default_offset, ctrl_range"
            )
        if (self.joint_ids < 0).any():
            raise ConfigError("actions.relative: every driven actuator must drive a 1-dof joint")
        return sim.joint_qposadr[self.joint_ids]

    def _span_ctrl_ranges(self, sim: Simulator, cfg: ActionCfg) -> None:
        if cfg.offset or cfg.use_default_offset:
            raise ConfigError("actions.ctrl_range: the ctrl ranges set the offsets; drop offset, use_default_offset")
        ids = self.actuator_ids.cpu().numpy()
        unlimited = [sim.actuator_names[i] for i in ids if not sim.mjm.actuator_ctrllimited[i]]
        if unlimited:
            raise ConfigError(f"actions.ctrl_range: actuators without a ctrlrange: {', '.join(unlimited)}")
        low, high = torch.as_tensor(sim.mjm.actuator_ctrlrange[ids], dtype=torch.float32, device=self.offset.device).T
        self.offset, self.span = (low + high) / 2, (high - low) / 2

    def drive(self, sim: Simulator, scaled_action: torch.Tensor) -> None:
        offset = self.offset if self.relative_qposadr is None else self.gear * sim.qpos[:, self.relative_qposadr]
        sim.ctrl[:, self.actuator_ids] = offset + self.span * scaled_action
        sim.step()


class Gripper:
    """The `GripperCfg`'s actuator, opened or closed by the sign of the last action."""

    def __init__(self, sim: Simulator, cfg: GripperCfg, driven: torch.Tensor, driver: str):
        field = "env.actions.gripper.actuator"
        if cfg.actuator not in sim.actuator_names:
            raise ConfigError(f"{cfg.actuator!r} is not an actuator of {sim.actuator_names}", field)
        self.id = sim.actuator_names.index(cfg.actuator)
        if self.id in driven.tolist():
            raise ConfigError(f"{cfg.actuator!r} is driven by {driver} as well; give it to one of them", field)
        self.open, self.closed = cfg.open, cfg.closed

    def drive(self, sim: Simulator, action: torch.Tensor) -> torch.Tensor:
        """Sets the gripper's ctrl from the last column of `action` and returns the other columns."""
        sim.ctrl[:, self.id] = torch.where(action[:, -1] >= 0, self.open, self.closed)
        return action[:, :-1]


class Actions:
    """Non-finite actions become 0 (documented; each env counts the steps it got one in
    `nonfinite`), then clip and scale as the `ActionCfg` says;
    `last` keeps the clipped action (terms read it as `env.action`). Without a low level (a
    frozen policy or a controller) the action drives `joints`, after the env's drawn delay; with
    one it is its command. With a `GripperCfg` the last action opens or closes the gripper."""

    def __init__(
        self, env: TaskEnv, cfg: ActionCfg, joints: JointTargets, low_level: LowLevelPolicy | ActionController | None
    ):
        self.cfg, self.joints, self.low_level = cfg, joints, low_level
        self.dim = joints.dim if low_level is None else low_level.command_dim
        self.gripper = None
        if cfg.gripper is not None:
            driver = "env.actions.actuators" if low_level is None else "env.actions.controller"
            driven = (joints if low_level is None else low_level).actuator_ids
            self.gripper = Gripper(env.sim, cfg.gripper, driven, driver)
            self.dim += 1
        n = env.num_envs
        self.last = torch.zeros(n, self.dim, device=env.device)
        self.nonfinite = torch.zeros(n, dtype=torch.long, device=env.device)  # steps with a NaN/inf action, per env
        _, high = cfg.delay_range
        self.delay = torch.zeros(n, dtype=torch.long, device=env.device)
        self.history = torch.zeros(high + 1, n, self.dim, device=env.device)  # [k]: the action k steps ago
        self._env_ids = torch.arange(n, device=env.device)

    def apply(self, env: TaskEnv, actions: torch.Tensor) -> None:
        """Cleans, clips and applies `actions`, stepping the physics through the env step."""
        self.nonfinite += ~torch.isfinite(actions).all(dim=1)
        action = torch.nan_to_num(actions.float(), nan=0.0, posinf=0.0, neginf=0.0)
        if self.cfg.clip is not None:
            action = action.clamp(-self.cfg.clip, self.cfg.clip)
        self.last.copy_(action)
        if self.low_level is None:
            self.joints.drive(env.sim, self.cfg.scale * self._grip(env, self._delayed(action)))
        else:
            self.low_level.drive(env, self.cfg.scale * self._grip(env, action))

    def _grip(self, env: TaskEnv, action: torch.Tensor) -> torch.Tensor:
        """The action without its gripper part, which opens or closes the gripper."""
        return action if self.gripper is None else self.gripper.drive(env.sim, action)

    def _delayed(self, action: torch.Tensor) -> torch.Tensor:
        """The action each env applies now: this step's, or with a delay the one from `delay` steps ago."""
        if len(self.history) == 1:
            return action
        self.history.copy_(torch.roll(self.history, 1, dims=0))
        self.history[0] = action
        return self.history[self.delay, self._env_ids]

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        """Zeroes the reset envs' last actions (and pending ones) and draws their new delay."""
        self.last.masked_fill_(mask[:, None], 0.0)
        low, high = self.cfg.delay_range
        if high > 0:
            self.history.masked_fill_(mask[None, :, None], 0.0)
            delay = env.randint((env.num_envs,), low, high + 1)
            self.delay.copy_(torch.where(mask, delay, self.delay))
        if self.low_level is not None:
            self.low_level.reset(env, mask)

    def _buffers(self) -> dict[str, torch.Tensor]:
        return {"last": self.last, "delay": self.delay, "history": self.history}

    def state_dict(self) -> dict[str, dict]:
        state = {"buffers": {name: value.clone() for name, value in self._buffers().items()}}
        return state | ({} if self.low_level is None else {"low_level": self.low_level.state_dict()})

    def load_state_dict(self, state: dict[str, dict]) -> None:
        load_checked(self._buffers(), state["buffers"], "actions/")
        if self.low_level is not None:
            if "low_level" not in state:
                raise ConfigError("--resume: the checkpoint's env state lacks actions/low_level")
            self.low_level.load_state_dict(state["low_level"])
