"""`TaskEnv`: a `VecEnv` assembled from a term-based `TaskCfg`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from phalanx.core.compiling import import_compiler
from phalanx.core.errors import ConfigError
from phalanx.core.vec_env import VecEnv
from phalanx.envs.actions import Actions, JointTargets
from phalanx.envs.broken_worlds import BrokenWorlds
from phalanx.envs.captured_step import CapturedStep
from phalanx.envs.cfg import ActionController, CommandTerm, TaskCfg
from phalanx.envs.low_level import LowLevelPolicy, LowLevelSource
from phalanx.envs.names import matching_ids, matching_indices
from phalanx.envs.random_numbers import StepRandoms
from phalanx.envs.schedules import Commands, Curriculum, Events
from phalanx.envs.tensor_state import load_checked
from phalanx.envs.term_group import Metrics, ObservationGroup, Rewards, Terminations, rows
from phalanx.envs.term_tables import print_term_tables
from phalanx.envs.terms import bind_term
from phalanx.envs.terrain_scene import TerrainScene
from phalanx.sim import Simulator
from phalanx.sim.columns import columns
from phalanx.sim.model import build_model


class TaskEnv(VecEnv):
    """Runs a `TaskCfg`: actions -> physics -> terminations, rewards -> auto-reset of done envs ->
    observations. See `VecEnv` for the contract.

    On CUDA the whole step is captured once as a CUDA graph and replayed (`capture`), so the tensors
    `step` returns are static buffers the next step overwrites; with `compile` its torch part goes
    through torch.compile first. Terms therefore keep their state in tensors updated in place: their
    Python runs when the step is traced and recorded (dry runs, `_dry_step`: at build, then at the
    first reset). With `reset=False` the caller resets the env (or loads a state) before stepping.
    State for terms ((num_envs, ...) on `device`): `sim`, `action`, `episode_length`, `time_limit`,
    `terminated`, `joints`, `capture`; terms draw random numbers with `uniform` and `randint`.
    """

    def __init__(
        self,
        cfg: TaskCfg,
        num_envs: int,
        device: torch.device,
        seed: int = 0,
        verbose: bool = True,
        capture: bool | None = None,
        compile: bool | None = None,  # noqa: A002 (the flag is named like torch.compile)
        low_level: LowLevelSource | None = None,
        reset: bool = True,
    ):
        cfg.check()
        if (cfg.actions.low_level is None) != (low_level is None):
            raise ConfigError(
                "a hierarchical task needs its low-level policy resolved (phalanx.make does it), any other none",
                "env.actions.low_level",
            )
        if device.type == "cuda":
            # CUDA graphs capture on the current device's stream: make it this env's device.
            torch.cuda.set_device(device)
        self.cfg, self.num_envs, self.device, self.seed = cfg, num_envs, device, seed
        # Known before the terms are built: a term may refuse to run inside a captured step.
        self.capture = device.type == "cuda" if capture is None else capture
        self.compile = (self.capture and cfg.compile_step) if compile is None else compile
        self.random = StepRandoms(seed, device)
        self.terrain: TerrainScene | None = None
        if cfg.terrain is not None:
            self.terrain = TerrainScene(cfg.terrain, num_envs, device, self.random, cfg.terrain_command)
        edit = None if self.terrain is None else self.terrain.add_to
        model = build_model(cfg.model, cfg.actuators, edit, cfg.cameras)
        if self.compile:  # before the physics' modules compile beside it (see `import_compiler`)
            import_compiler()
        contacts = None if self.terrain is None else self.terrain.grid_contacts(model)
        self.sim = Simulator(model, num_envs, str(device), cfg.sim, contacts)
        self.step_dt = self.sim.dt * cfg.sim.decimation * cfg.actions.low_level_steps()
        self.max_episode_length = math.ceil(cfg.episode_length_s / self.step_dt - 1e-6)
        self._joint_ids_cache: dict[str, torch.Tensor] = {}
        self._joint_columns_cache: dict[str, slice | torch.Tensor] = {}
        self._constants: dict[tuple[float, ...], torch.Tensor] = {}

        self.episode_length = torch.zeros(num_envs, dtype=torch.long, device=device)  # env steps
        # the env steps at which each env's current episode times out
        self.time_limit = torch.full((num_envs,), self.max_episode_length, dtype=torch.long, device=device)
        self.step_count = torch.zeros((), dtype=torch.long, device=device)  # env steps since creation
        self.terminated = torch.zeros(num_envs, dtype=torch.bool, device=device)  # this step's terminal flags
        self._every_env = torch.ones(num_envs, dtype=torch.bool, device=device)
        # The parts, in the order their timers draw: events, then commands.
        self.events = Events(self, cfg.events)
        self.commands = Commands(self, cfg.commands)
        # The actuators the actions drive: the task's own, or those of its low-level policy's task.
        self.joints = JointTargets(self.sim, cfg.actions if low_level is None else low_level.env_cfg.actions, device)
        if low_level is not None:
            lower = LowLevelPolicy(self, cfg.actions.low_level, low_level)
        elif cfg.actions.controller is not None:
            lower = bind_term(self, cfg.actions.controller.func, cfg.actions.controller.params)
        else:
            lower = None
        self.actions = Actions(self, cfg.actions, self.joints, lower)
        self.action_dim = self.actions.dim
        self.action_clip = cfg.actions.clip
        self.observations = {
            group: ObservationGroup(self, terms, f"observations/{group}") for group, terms in cfg.observations.items()
        }
        self.rewards = Rewards(self, cfg.rewards, self.step_dt if cfg.reward_scale_by_dt else 1.0)
        self.terminations = Terminations(self, cfg.terminations, "terminations")
        self.metrics = Metrics(self, cfg.metrics)
        self.curriculum = Curriculum(self, cfg.curriculum)
        self.broken_worlds = BrokenWorlds(num_envs, device)
        self.reward_names, self.metric_names = self.rewards.names, self.metrics.names

        self.stepper = CapturedStep(
            self._step, (num_envs, self.action_dim), device, self.random.generator, self.capture, self.compile
        )

        if self.terrain is not None:
            self.terrain.check(self)
        for group in (*self.observations.values(), self.rewards, self.terminations, self.metrics):
            group.check(self)
        self.events.startup(self)
        self.obs = {}  # the first reset makes them
        self._trace_pending = False
        obs = self._dry_step(self._step)  # counts the random numbers a step takes (`StepRandoms`)
        self.obs = {group: torch.zeros_like(value) for group, value in obs.items()}  # until the first reset
        self._trace_pending, self.reset_pending = self.compile, True
        if reset:
            self.reset()
        self.observation_spec = {group: tuple(value.shape[1:]) for group, value in self.obs.items()}
        self.obs_term_shapes = {group: terms.shapes for group, terms in self.observations.items()}
        if verbose:
            print_term_tables(self)

    # ----------------------------------------------------------------------------- public API

    @property
    def action(self) -> torch.Tensor:
        """(num_envs, action_dim) the last clipped action."""
        return self.actions.last

    @property
    def low_level(self) -> LowLevelPolicy | ActionController | None:
        """What the actions command, if not the actuators: a frozen policy or a controller."""
        return self.actions.low_level

    def reset(self, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Resets the envs where `mask` (num_envs,) bool is True (all when None) and returns the
        observations of every env; the others keep their state."""
        if self.reset_pending and mask is not None:
            raise ValueError("mask: the env's first reset resets every env (mask=None)")
        if self._trace_pending:  # the first reset traces the compiled step (see the class)
            self._trace_pending = False
            self._dry_step(self.stepper.fn)
        every_env = mask is None
        if every_env:
            mask = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        elif mask.shape != (self.num_envs,) or mask.dtype != torch.bool or mask.device != self.device:
            raise ValueError(
                f"mask: expected a bool tensor of shape ({self.num_envs},) on {self.device}, "
                f"got {mask.dtype} {tuple(mask.shape)} on {mask.device}"
            )
        self._reset_envs(mask)
        obs = self._compute_obs(commit=mask)
        self.reset_pending = False
        if not every_env:  # the other envs keep their observations too (fresh noise included)
            obs = {group: torch.where(rows(mask, value), value, self.obs[group]) for group, value in obs.items()}
        self.obs = obs
        return obs

    def step(self, actions: torch.Tensor):
        if self.reset_pending:
            raise RuntimeError("step: the env was made with reset=False; call reset() before the first step")
        self._check_actions(actions)
        out = self.stepper(actions)
        self.obs = out[0]
        return out

    def _dry_step(self, step: Callable[[torch.Tensor], Any]) -> dict[str, torch.Tensor]:
        """Resets and calls `step` (the eager or the compiled step) once with the simulator's Warp
        launches skipped (other work, e.g. a QP kernel, runs on the stale state), then puts the
        state back; returns the reset's observations."""
        state = self.state_dict()
        try:
            with self.sim.warp_skipped():
                obs = self.reset()
                step(torch.zeros((self.num_envs, self.action_dim), device=self.device))
        finally:
            self.load_state_dict(state)
        return obs

    def randomize_time_limits(self) -> None:
        """Ends each env's current episode after 1 to `max_episode_length` env steps from its
        start, drawn uniformly; later episodes run their full length (see `VecEnv`)."""
        self.time_limit.copy_(self.randint((self.num_envs,), 1, self.max_episode_length + 1))

    def manual_seed(self, seed: int) -> None:
        self.random.generator.manual_seed(seed)

    @property
    def invalid_resets(self) -> torch.Tensor:
        """Device scalar: envs reset so far because their simulation broke (no host sync)."""
        return self.broken_worlds.envs

    @property
    def nonfinite_actions(self) -> torch.Tensor:
        """Device scalar: env steps so far (in this process) whose action held a NaN or inf, applied as 0."""
        return self.actions.nonfinite.sum()

    def report_invalid(self) -> list[str]:
        """Host-side summary of envs reset because the simulation broke, by reason, with the
        option to fix it, and of non-finite actions. Reads counters from the device: call it
        once per iteration."""
        lines = self.broken_worlds.report(self.sim)
        nonfinite = int(self.nonfinite_actions)
        if nonfinite:
            lines.append(
                f"{nonfinite} env steps got a NaN/inf action (applied as 0): the policy's output was not finite"
            )
        return lines

    def state_dict(self) -> dict[str, Any]:
        """Everything that decides the next steps: the simulator state, the episode buffers, each
        part's state (terms, timers, curricula, actions, terrain), the last observations and the
        random generator."""
        state = {
            "num_envs": self.num_envs,
            "sim": self.sim.state_dict(),
            "episode": {name: value.clone() for name, value in self._episode_buffers().items()},
            "obs": {group: value.clone() for group, value in self.obs.items()},
            "rng": self.random.generator.get_state(),
        }
        return state | {name: part.state_dict() for name, part in self._parts().items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a `state_dict` in place; the env then continues exactly where it was saved."""
        if state["num_envs"] != self.num_envs:
            raise ConfigError(
                f"--num-envs: the checkpoint's env state has {state['num_envs']} envs, this run has {self.num_envs}"
            )
        missing = [name for name in ("sim", "episode", "obs", "rng", *self._parts()) if name not in state]
        if missing:
            raise ConfigError(f"--resume: the checkpoint's env state lacks {missing} (written by an older phalanx)")
        # Checkpoints from before per-env time limits ran every episode to its full length.
        episode = {"time_limit": torch.full_like(self.time_limit, self.max_episode_length)} | state["episode"]
        load_checked(self._episode_buffers(), episode, "episode/")
        for name, part in self._parts().items():
            part.load_state_dict(state[name])
        self.sim.load_state_dict(state["sim"])
        self.obs = {group: value.to(self.device).clone() for group, value in state["obs"].items()}
        self.random.generator.set_state(state["rng"])
        # A loaded env needs no first reset; its first step traces the compiled step, Warp running.
        self.reset_pending = self._trace_pending = False

    def command(self, name: str) -> torch.Tensor:
        """(num_envs, d) the current value of the named command."""
        return self.command_term(name).command

    def command_term(self, name: str) -> CommandTerm:
        """The named command's term (its ranges and state, e.g. for a curriculum)."""
        return self.commands.term(self, name)

    def episode_reward_sum(self, name: str) -> torch.Tensor:
        """(num_envs,) the named reward term's weighted sum over each env's current episode."""
        if name not in self.rewards.names:
            raise ValueError(f"task {self.cfg.name!r}: no reward term {name!r}; it has {self.rewards.names}")
        return self.rewards.episode_sum(name)

    def constant(self, values: tuple[float, ...]) -> torch.Tensor:
        """A float32 tensor of `values` on the env's device, made once (no host copy per step)."""
        tensor = self._constants.get(values)
        if tensor is None:
            tensor = self._constants[values] = torch.tensor(values, dtype=torch.float32, device=self.device)
        return tensor

    def joint_ids(self, pattern: str) -> torch.Tensor:
        """Indices into `sim.joint_names` of the 1-dof joints whose names match `pattern` (cached)."""
        ids = self._joint_ids_cache.get(pattern)
        if ids is None:
            ids = matching_ids(pattern, self.sim.joint_names, "joint pattern", "joint", self.device)
            self._joint_ids_cache[pattern] = ids
        return ids

    def joint_columns(self, pattern: str) -> slice | torch.Tensor:
        """`joint_ids(pattern)` as an indexer for reading (cached): a slice where the joints are
        consecutive, so that `state.joint_pos(env)[:, env.joint_columns(p)]` is a view."""
        cols = self._joint_columns_cache.get(pattern)
        if cols is None:
            indices = matching_indices(pattern, self.sim.joint_names, "joint pattern", "joint")
            cols = self._joint_columns_cache[pattern] = columns(indices, self.device)
        return cols

    def geom_ids(self, pattern: str) -> torch.Tensor:
        """Indices into `sim.geom_names` of the geoms whose names match `pattern`."""
        return matching_ids(pattern, self.sim.geom_names, "geom pattern", "geom", self.device)

    def uniform(self, shape: tuple[int, ...], low: float | torch.Tensor, high: float | torch.Tensor) -> torch.Tensor:
        """Uniform samples in [low, high) (floats, or tensors that broadcast to `shape`) from the
        env's generator (`StepRandoms`)."""
        return low + (high - low) * self.random.uniform(shape)

    def randint(self, shape: tuple[int, ...], low: int, high: int) -> torch.Tensor:
        """int64 samples uniform over low, ..., high - 1, like `torch.randint`."""
        return self.random.randint(shape, low, high)

    # ----------------------------------------------------------------------------- the step

    def _step(self, actions: torch.Tensor):
        self.random.begin_step()
        self.actions.apply(self, actions)
        self.episode_length += 1
        self.step_count += 1

        # A broken env (buffer overflow; diverged physics; NaN/inf in its observations or rewards)
        # ends its episode without reward or bootstrap, is reset below and counted.
        reasons = self.sim.check_worlds()  # (num_envs, 3): contact overflow, constraint overflow, diverged
        final_obs = self._compute_obs(commit=None)
        for value in final_obs.values():
            BrokenWorlds.flag_nonfinite(reasons, value)
        terminated, time_out = self.terminations.compute(self)
        self.terminated.copy_(terminated | reasons.any(dim=1))  # reward terms read it
        values = self.rewards.values(self)
        BrokenWorlds.flag_nonfinite(reasons, values)
        broken = self.broken_worlds.count(reasons)
        self.terminated |= broken
        truncated = time_out & ~self.terminated
        reward = self.rewards.weigh(values, broken)
        self.metrics.accumulate(self, broken)
        done = self.terminated | truncated
        for group, value in final_obs.items():  # a loop: a comprehension is a graph break on Python 3.11
            final_obs[group] = torch.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0)
        sums = self.rewards.episode_sums.clone()  # one copy; the terms' sums are its columns
        episode = {
            "done": done,
            "return": self.rewards.episode_return.clone(),
            "length": self.episode_length.clone(),
            "terms": {name: sums[:, i] for i, name in enumerate(self.rewards.names)},
            "metrics": self.metrics.episode(self.episode_length),
        }
        self._reset_envs(done)
        self.events.step(self)
        self.commands.step(self)
        obs = self._compute_obs(commit=self._every_env)
        extras = {"final_obs": final_obs, "episode": episode, "log": self._log()}
        self.random.end_step()
        return obs, reward, self.terminated.clone(), truncated, extras

    def _reset_envs(self, mask: torch.Tensor) -> None:
        self.curriculum.reset(self, mask)  # first: it judges the episodes that end here
        if self.terrain is not None:
            self.terrain.before_reset(self, mask)
        self.episode_length.masked_fill_(mask, 0)  # before the parts reset: they see a new episode
        self.time_limit.masked_fill_(mask, self.max_episode_length)
        self.sim.reset_(mask)
        if self.terrain is not None:
            self.terrain.place(self, mask)
        self.events.reset(self, mask)
        self.commands.reset(self, mask)
        self.actions.reset(self, mask)
        for part in (*self.observations.values(), self.rewards, self.terminations, self.metrics):
            part.reset(self, mask)

    def _compute_obs(self, commit: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """Every group's observations; `commit`: see `ObservationGroup.compute`."""
        return {group: terms.compute(self, commit) for group, terms in self.observations.items()}

    def _log(self) -> dict[str, torch.Tensor]:
        log = {} if self.terrain is None else {"terrain_level": self.terrain.mean_level()}
        return log | self.curriculum.log()

    # ----------------------------------------------------------------------------- internals

    def _episode_buffers(self) -> dict[str, torch.Tensor]:
        return {
            "length": self.episode_length,
            "time_limit": self.time_limit,
            "step_count": self.step_count,
            "terminated": self.terminated,
        }

    def _parts(self) -> dict[str, Any]:
        """The parts that keep per-env state of their own, by state_dict key."""
        parts: dict[str, Any] = {f"observations/{group}": terms for group, terms in self.observations.items()}
        parts |= {"rewards": self.rewards, "terminations": self.terminations, "metrics": self.metrics}
        parts |= {"commands": self.commands, "events": self.events, "curriculum": self.curriculum}
        parts |= {"actions": self.actions, "broken_worlds": self.broken_worlds}
        return parts | ({} if self.terrain is None else {"terrain": self.terrain})

    def _check_actions(self, actions: torch.Tensor) -> None:
        if not isinstance(actions, torch.Tensor):
            raise TypeError(f"actions: expected a torch.Tensor, got {type(actions).__name__}")
        expected = (self.num_envs, self.action_dim)
        if tuple(actions.shape) != expected:
            raise ValueError(f"actions: expected shape {expected}, got {tuple(actions.shape)}")
        if actions.device != self.device:
            raise ValueError(f"actions: expected device {self.device}, got {actions.device}")
        if not actions.is_floating_point():
            raise ValueError(f"actions: expected a floating-point tensor, got {actions.dtype}")
