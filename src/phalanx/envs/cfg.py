"""Typed configuration of a term-based task.

A task is a `TaskCfg` returned by a function (see `phalanx.tasks`). Its sections map term
names to term configs; the env builds each term once and prints them as tables at creation.

A term's `func` is either a plain function `func(env, **params)` or a `Term` subclass, built once
as `func(env, **params)` and then called as `term(env)` every step (for terms that resolve names
to indices up front or keep state across steps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch

from phalanx.core.errors import ConfigError, check_int, check_positive, check_range
from phalanx.envs.tensor_state import load_tensor_state, tensor_state
from phalanx.sim.actuators import ActuatorCfg
from phalanx.sim.cameras import CameraCfg
from phalanx.sim.cfg import SimCfg
from phalanx.terrain.generator import TerrainCfg

if TYPE_CHECKING:
    from phalanx.envs.markers import Marker
    from phalanx.envs.task_env import TaskEnv
    from phalanx.sim.simulator import Simulator


class Term:
    """Base of terms that are built once per env and may keep per-env state."""

    def __init__(self, env: TaskEnv, **params: Any):
        del env, params

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        raise NotImplementedError

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        """Called after the envs where `mask` (num_envs,) is True were reset."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The term's state, for an exact resume: by default its tensor attributes (and those of
        plain objects it holds); override if it keeps state elsewhere."""
        return tensor_state(self)

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        load_tensor_state(self, state)


TermFunc = Callable[..., Any] | type[Term]


@dataclass
class ObsTermCfg:
    """One observation term: a (num_envs, d) float tensor, or (num_envs, H, W, C) images."""

    func: TermFunc
    params: dict[str, Any] = field(default_factory=dict)
    scale: float = 1.0
    """Multiplies the term's value."""
    clip: tuple[float, float] | None = None
    """Clamps the scaled value to (low, high)."""
    noise: float | None = None
    """Adds uniform noise in [-noise, noise] to the (scaled, clipped) value at every step."""
    history: int = 1
    """Observe the term's last `history` values, newest first, concatenated along the last axis
    (an image's channels: stacked frames). After a reset every slot holds the first value."""


@dataclass
class RewardTermCfg:
    """One reward term: a (num_envs,) float tensor, multiplied by `weight` (and by the env step
    dt when the task sets `reward_scale_by_dt`)."""

    func: TermFunc
    weight: float
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class MetricTermCfg:
    """One metric: a (num_envs,) float tensor per env step, not part of the reward. The trainer
    logs `metrics/NAME`: its mean over each episode's steps (or, with `final`, its value at the
    last step), averaged over the episodes that ended in the iteration (e.g. the velocity-tracking
    error of a legged task, or whether a navigating robot reached its goal)."""

    func: TermFunc
    params: dict[str, Any] = field(default_factory=dict)
    final: bool = False
    """Log the value at the episode's last step instead of its mean (e.g. "goal reached")."""


@dataclass
class TerminationTermCfg:
    """One termination term: a (num_envs,) bool tensor."""

    func: TermFunc
    params: dict[str, Any] = field(default_factory=dict)
    time_out: bool = False
    """True for truncations (time limits): the trainer bootstraps from `final_obs`."""


@dataclass
class EventTermCfg:
    """One event: `func(env, mask, **params)` changes the state of the envs where mask is True."""

    func: Callable[..., None]
    mode: Literal["startup", "reset", "interval"]
    params: dict[str, Any] = field(default_factory=dict)
    interval_range_s: tuple[float, float] | None = None
    """For mode "interval": each env fires after a time drawn uniformly from this range (seconds)."""


@dataclass
class CurriculumTermCfg:
    """One curriculum: `func(env, mask, **params)` runs at every reset, before the envs where mask
    is True lose their episode (its statistics are still readable), and may make the task harder
    or easier; it returns a scalar device tensor (its current level), logged as env/NAME (the
    mean over ranks: each rank judges its own envs, so ranks may sit at different levels)."""

    func: Callable[..., torch.Tensor]
    params: dict[str, Any] = field(default_factory=dict)


class CommandTerm(Term):
    """A per-env command the policy must follow (e.g. a base velocity). `command` holds it,
    (num_envs, d); the env calls `reset(env, mask)` and `resample(env, mask)` at reset,
    `resample` when an env's resampling timer runs out, then `update(env)` every step. Calling
    the term returns the command: the one the policy observes (terms that need the state after the
    physics read the state)."""

    command: torch.Tensor

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        raise NotImplementedError

    def update(self, env: TaskEnv) -> None:
        """Called every env step after the resampling (e.g. a target heading becomes a yaw rate)."""

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return self.command

    def markers(self, env: TaskEnv) -> dict[str, Marker]:
        """Shapes that show the command in the world (the web viewer draws them); none by default."""
        return {}


@dataclass
class CommandTermCfg:
    """One command: a `CommandTerm` subclass, resampled per env after a time drawn uniformly from
    `resampling_time_range_s` (and at every reset)."""

    func: type[CommandTerm]
    resampling_time_range_s: tuple[float, float]
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class LowLevelPolicyCfg:
    """Hierarchical control (Isaac Lab's PreTrainedPolicyAction): the env's actions become the
    `command` of a frozen policy trained on `task`, which drives the actuators with its own
    observations and actions for `decimation` steps (of `sim.decimation` physics steps each)
    per env step. The task must hold `command` as a `held_command` for the policy to write."""

    task: str
    """The low-level policy's task (its observations and ActionCfg), e.g. "anymal-flat"."""
    checkpoint: str | None = None
    """A checkpoint of that task; None: an untrained policy of its default size (for listing,
    tests and benchmarks; `phalanx train` asks for one)."""
    command: str = "base_velocity"
    decimation: int = 10


class ActionController(Term):
    """A model-based low level (`ControllerCfg`): the env's (clipped, scaled) actions are its
    command, `command_dim` wide; `drive` sets the actuators from it and steps the physics, as many
    control steps as its `ControllerCfg.decimation` says (e.g. `mdp.quadruped_control`'s QP
    controller). Built once as `func(env, **params)`; `reset` starts the envs of a mask anew."""

    command_layout: list[tuple[str, int, float]]
    """The command's parts in order: name, width, and what one unit of the command means in the
    part's own units (for the env's tables)."""
    actuator_ids: torch.Tensor
    """The actuators it drives."""

    @property
    def command_dim(self) -> int:
        return sum(width for _, width, _ in self.command_layout)

    @staticmethod
    def actuators_of(sim: Simulator, joints: list[int]) -> list[int]:
        """The actuator that drives each of `joints` (indices into `sim.joint_names`); a joint
        without one is a ConfigError naming `env.actuators`."""
        actuated = sim.actuator_joint_ids.tolist()
        undriven = [sim.joint_names[j] for j in joints if j not in actuated]
        if undriven:
            raise ConfigError(f"joints {undriven} have no actuator", "env.actuators")
        return [actuated.index(j) for j in joints]

    def drive(self, env: TaskEnv, command: torch.Tensor) -> None:
        raise NotImplementedError


@dataclass
class ControllerCfg:
    """Actions command a model-based controller that drives the actuators itself: `decimation`
    control steps per env step, each of one physics step (`sim.decimation` substeps) at the torques
    it set (Da and Xie's RL policy over a QP controller)."""

    func: type[ActionController]
    params: dict[str, Any] = field(default_factory=dict)
    decimation: int = 4


@dataclass
class GripperCfg:
    """One more action, the last, opens or closes a gripper (Isaac Lab's BinaryJointPositionAction):
    >= 0 sets the actuator's ctrl to `open`, < 0 to `closed`."""

    actuator: str
    """The gripper's actuator, by name (one the other actions do not drive)."""
    open: float
    closed: float


@dataclass
class ActionCfg:
    """Actions drive actuators: ctrl = offset + scale * clip(action, -clip, clip), plus the driven
    joints' default positions with `use_default_offset` (position actuators: actions are offsets
    from the default pose); with `ctrl_range`, ctrl = middle + half-width x scale x clip(action)."""

    actuators: str = ".*"
    """Regular expression selecting the driven actuators by name, in model order."""
    scale: float = 1.0
    offset: float = 0.0
    use_default_offset: bool = False
    """Add each driven joint's default position (the "home" keyframe, else qpos0) to its ctrl."""
    relative: bool = False
    """Targets relative to the driven joints' positions (in the spirit of Isaac Lab's
    RelativeJointPositionAction): ctrl = gear x joint position at the env step's start + scale x
    clip(action), held through the step's physics steps. A zero action holds the joints where they
    are, and a policy that keeps acting on a remaining error keeps moving (integral action);
    joint targets only (no low level, no controller); `offset`, `use_default_offset` and
    `ctrl_range` then do not apply."""
    clip: float | None = 1.0
    """Actions are clamped to [-clip, clip] before scaling; None: no clamp."""
    ctrl_range: bool = False
    """Actions span each driven actuator's ctrlrange instead: ctrl = its middle + its half-width x
    scale x clip(action), so -1 and 1 reach its ends (Isaac Lab's in-hand tasks); `offset` and
    `use_default_offset` then do not apply."""
    low_level: LowLevelPolicyCfg | None = None
    """Actions command a frozen low-level policy instead of driving actuators (see
    `LowLevelPolicyCfg`); then `actuators`, `offset` and `use_default_offset` come from its task,
    and `scale`/`clip` shape the command."""
    controller: ControllerCfg | None = None
    """Actions command a model-based controller instead of driving actuators (see
    `ControllerCfg`); `scale`/`clip` shape the command, the controller picks its actuators."""
    gripper: GripperCfg | None = None
    """A last action that opens or closes a gripper, besides the joint targets or the controller's
    command (see `GripperCfg`)."""
    delay_range: tuple[int, int] = (0, 0)
    """Actuation delay in env steps: each env applies the action of `delay` steps ago, `delay`
    drawn uniformly from this inclusive range at every reset (an env reset with a delay holds
    the zero action until its first actions arrive). (0, 0): no delay."""

    def low_level_steps(self) -> int:
        """Steps of the low level (a frozen policy or a controller) per env step, each of
        `sim.decimation` physics steps; 1 when the actions drive the actuators themselves."""
        low = self.low_level or self.controller
        return 1 if low is None else low.decimation


TERM_GROUPS = ("rewards", "terminations", "events", "commands", "metrics", "curriculum")
"""The TaskCfg fields holding named terms, besides the observation groups."""
MAX_EPISODE_S = 1e6
"""The longest episode a task may have (11.6 days of simulated time): its step count fits the
env's counters at any time step."""


@dataclass(kw_only=True)
class TaskCfg:
    """Everything that defines a task (its env). Register it with `phalanx.register`, or pass it
    to `phalanx.make` directly; `phalanx train TASK --env.FIELD VALUE` overrides any field."""

    model: str
    """MJCF or URDF file path, or an MJCF XML string."""
    episode_length_s: float
    observations: dict[str, dict[str, ObsTermCfg]]
    """Observation groups ("policy", optionally "critic") of named terms, concatenated in order."""
    rewards: dict[str, RewardTermCfg]
    terminations: dict[str, TerminationTermCfg] = field(default_factory=dict)
    name: str = ""
    """The task's name (`phalanx.register` sets it)."""
    description: str = ""
    sim: SimCfg = field(default_factory=SimCfg)
    actuators: list[ActuatorCfg] = field(default_factory=list)
    """Actuators given to the model's joints before it compiles (replacing those it has on them),
    so that URDF and third-party MJCF robots train without editing their files."""
    cameras: dict[str, CameraCfg] = field(default_factory=dict)
    """Cameras added to the model before it compiles, by name (for `observations.camera_image`)."""
    actions: ActionCfg = field(default_factory=ActionCfg)
    events: dict[str, EventTermCfg] = field(default_factory=dict)
    commands: dict[str, CommandTermCfg] = field(default_factory=dict)
    """Named commands (observed and rewarded through `env.command(name)`)."""
    metrics: dict[str, MetricTermCfg] = field(default_factory=dict)
    """Named per-step measurements logged as episode means (see `MetricTermCfg`)."""
    curriculum: dict[str, CurriculumTermCfg] = field(default_factory=dict)
    """Named curricula run at reset (see `CurriculumTermCfg`)."""
    terrain: TerrainCfg | None = None
    """A generated terrain in place of the model's geom named "floor": each env spawns at the
    center of its tile (reset events then add their offsets)."""
    terrain_command: str | None = None
    """With a terrain: the velocity command whose distance the terrain curriculum holds each env
    to at its reset (harder level beyond half a tile walked, easier one below half the distance
    the command asked for); None: envs keep the level they were given."""
    reward_scale_by_dt: bool = True
    """Multiply each weighted reward term by the env step dt (Isaac Lab's manager-based convention)."""
    num_envs: int = 4096
    """Parallel envs on a GPU, where `--num-envs` (`make(num_envs=)`) does not say."""
    cpu_num_envs: int = 256
    """Parallel envs on the CPU, where `--num-envs` (`make(num_envs=)`) does not say."""
    compile_step: bool = True
    """Where the step is captured as a CUDA graph (CUDA): torch.compile its torch part first, which
    fuses the terms' small kernels into a few, at the price of seconds of start-up (tracing, and
    inductor's compilation when its cache is cold)."""

    def default_num_envs(self, device: torch.device) -> int:
        """The task's env count on `device`: `num_envs` on a GPU, `cpu_num_envs` on the CPU."""
        return self.num_envs if device.type == "cuda" else self.cpu_num_envs

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`env.FIELD`) that needs no model to judge."""
        check_positive("env.episode_length_s", self.episode_length_s, " seconds")
        if self.episode_length_s > MAX_EPISODE_S:
            raise ConfigError(
                f"must be at most {MAX_EPISODE_S:g} seconds, got {self.episode_length_s!r}", "env.episode_length_s"
            )
        check_int("env.num_envs", self.num_envs)
        check_int("env.cpu_num_envs", self.cpu_num_envs)
        self.sim.check("env.sim")
        for i, actuator in enumerate(self.actuators):
            actuator.check(f"env.actuators[{i}]")
        for name, camera in self.cameras.items():
            camera.check(f"env.cameras.{name}")
        if "policy" not in self.observations:
            raise ConfigError(f"needs a 'policy' group; got {list(self.observations)}", "env.observations")
        self._check_term_kinds()
        for group, terms in self.observations.items():
            for name, term in terms.items():
                where = f"env.observations.{group}.{name}"
                check_int(f"{where}.history", term.history)
                check_range(f"{where}.scale", term.scale)
                if term.noise is not None:
                    check_range(f"{where}.noise", term.noise, 0.0)
                if term.clip is not None and not term.clip[0] <= term.clip[1]:  # NaN compares False
                    raise ConfigError(f"must be (low, high) with low <= high, got {term.clip}", f"{where}.clip")
        for name, term in self.rewards.items():
            check_range(f"env.rewards.{name}.weight", term.weight)
        for field_name in ("scale", "offset"):
            check_range(f"env.actions.{field_name}", getattr(self.actions, field_name))
        if self.actions.clip is not None:
            check_positive("env.actions.clip", self.actions.clip)
        low, high = self.actions.delay_range
        if not 0 <= low <= high:
            raise ConfigError(
                f"must be 0 <= low <= high env steps, got {self.actions.delay_range}", "env.actions.delay_range"
            )
        for kind in ("low_level", "controller"):
            low = getattr(self.actions, kind)
            if low is not None:
                check_int(f"env.actions.{kind}.decimation", low.decimation)
                if self.actions.delay_range != (0, 0):
                    raise ConfigError(f"not supported with actions.{kind}", "env.actions.delay_range")
                if self.actions.relative:
                    raise ConfigError(f"joint targets only, not with actions.{kind}", "env.actions.relative")
        if self.actions.low_level is not None and self.actions.controller is not None:
            raise ConfigError("a task's actions command a low-level policy or a controller, not both", "env.actions")
        if self.actions.low_level is not None and self.actions.gripper is not None:
            raise ConfigError("not supported with actions.low_level", "env.actions.gripper")

    def _check_term_kinds(self) -> None:
        """Each term's `func` is a function or class and its `params` a dict (as the API or a
        stored config may give them otherwise)."""
        groups = {f"observations.{group}": terms for group, terms in self.observations.items()}
        groups |= {kind: getattr(self, kind) for kind in TERM_GROUPS}
        for where, terms in groups.items():
            if not isinstance(terms, dict):
                raise ConfigError(f"must be a dict of named terms, got {type(terms).__name__}", f"env.{where}")
            for name, term in terms.items():
                field_name = f"env.{where}.{name}"
                if not callable(getattr(term, "func", None)):
                    got = type(getattr(term, "func", term)).__name__
                    raise ConfigError(f"must be a function or a Term class, got a {got}", f"{field_name}.func")
                if not isinstance(term.params, dict):
                    raise ConfigError(f"must be a dict, got a {type(term.params).__name__}", f"{field_name}.params")


def exact_policy_observations(cfg: TaskCfg) -> None:
    """A play config: the policy's observations without their noise (Isaac Lab's PLAY variants)."""
    for term in cfg.observations["policy"].values():
        term.noise = None
