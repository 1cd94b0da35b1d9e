"""`TaskEnv`: a `VecEnv` assembled from a term-based `TaskCfg`."""

from __future__ import annotations

import math
import re
from typing import Any

import torch

from phalanx.envs.cfg import CommandTerm, ObsTermCfg, TaskCfg
from phalanx.envs.low_level import LowLevelPolicy, LowLevelSource
from phalanx.envs.tables import print_term_tables
from phalanx.envs.terms import bind_term
from phalanx.envs.terrain_scene import TerrainScene
from phalanx.envs.vec_env import VecEnv
from phalanx.errors import ConfigError
from phalanx.sim import Simulator
from phalanx.sim.model import build_model


class TaskEnv(VecEnv):
    """Runs a `TaskCfg`: actions -> physics (captured on CUDA) -> terminations, rewards ->
    auto-reset of done envs -> observations. See `VecEnv` for the contract.

    On CUDA the whole step (actions, physics, terms, resets, observations) is captured once as a
    CUDA graph and replayed (`capture=True`, the default there): the tensors `step` returns are
    then the graph's static buffers, overwritten by the next step, so copy what you keep. With
    `compile=True` (default: same as capture) the torch part of the step goes through
    torch.compile first, which fuses hundreds of small term kernels into a few.

    Useful state for terms (all (num_envs, ...) on `device`): `sim` (the `Simulator` and its
    views), `action` (the last clipped action), `episode_length` (env steps), `terminated`
    (this step's terminal flags), `rng` (the env's torch generator).
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
    ):
        if capture and device.type != "cuda":
            raise ConfigError(f"capture: CUDA graph capture needs a CUDA device, got {device}")
        cfg.check()
        if (cfg.actions.low_level is None) != (low_level is None):
            raise ConfigError(
                "a hierarchical task needs its low-level policy resolved (phalanx.make does it), any other none",
                "env.actions.low_level",
            )
        if device.type == "cuda":
            # CUDA graphs capture on the current device's stream: make it this env's device.
            torch.cuda.set_device(device)
        self.cfg = cfg
        self.num_envs = num_envs
        self.device = device
        self.seed = seed
        self.rng = torch.Generator(device=device)
        self.rng.manual_seed(seed)
        self.terrain: TerrainScene | None = None
        if cfg.terrain is not None:
            self.terrain = TerrainScene(cfg.terrain, num_envs, device, self.rng, cfg.terrain_command)
        model = build_model(cfg.model, cfg.actuators, edit=None if self.terrain is None else self.terrain.add_to)
        self.sim = Simulator(model, num_envs, str(device), cfg.sim)
        hierarchy = 1 if cfg.actions.low_level is None else cfg.actions.low_level.decimation
        self.step_dt = self.sim.dt * cfg.sim.decimation * hierarchy
        self.max_episode_length = math.ceil(cfg.episode_length_s / self.step_dt - 1e-6)

        self._joint_ids_cache: dict[str, torch.Tensor] = {}
        self._constants: dict[tuple[float, ...], torch.Tensor] = {}
        # The actuators the actions drive: the task's own, or those of its low-level policy's task.
        joint_cfg = cfg.actions if low_level is None else low_level.env_cfg.actions
        self.actuator_ids = self._select_actuators(joint_cfg.actuators)
        self.joint_action_dim = len(self.actuator_ids)
        self.action_joint_ids = self.sim.actuator_joint_ids[self.actuator_ids]  # (joint_action_dim,) into sim joints
        self.action_gear = self.sim.actuator_gear[self.actuator_ids]  # (joint_action_dim,)
        self.joint_action_offset = torch.full((self.joint_action_dim,), joint_cfg.offset, device=device)
        if joint_cfg.use_default_offset:
            if (self.action_joint_ids < 0).any():
                raise ConfigError("actions.use_default_offset: every driven actuator must drive a 1-dof joint")
            self.joint_action_offset += self.sim.default_qpos[self.sim.joint_qposadr[self.action_joint_ids]]
        self._command_terms = {name: (bind_term(self, c.func, c.params), c) for name, c in cfg.commands.items()}
        self.low_level = None if low_level is None else LowLevelPolicy(self, cfg.actions.low_level, low_level)
        self.action_dim = self.joint_action_dim if self.low_level is None else self.low_level.command_dim
        self.capture = device.type == "cuda" if capture is None else capture
        self._graph: torch.cuda.CUDAGraph | None = None
        self._graph_in = torch.zeros(num_envs, self.action_dim, device=device)
        self._graph_out: tuple | None = None
        # torch.compile fuses the term arithmetic around the physics (which stays Warp's captured
        # graph) into a few kernels; the whole-step CUDA graph then replays those.
        self.compile = self.capture if compile is None else compile
        self._step_fn = torch.compile(self._step, dynamic=False) if self.compile else self._step
        n, dev = num_envs, device
        self.action = torch.zeros(n, self.action_dim, device=dev)
        _, high = cfg.actions.delay_range
        self._action_delay = torch.zeros(n, dtype=torch.long, device=dev)
        self._action_history = torch.zeros(high + 1, n, self.action_dim, device=dev)  # [k]: the action k steps ago
        self._env_ids = torch.arange(n, device=dev)
        self.episode_length = torch.zeros(n, dtype=torch.long, device=dev)
        self.step_count = torch.zeros((), dtype=torch.long, device=dev)  # env steps since creation
        self.episode_return = torch.zeros(n, device=dev)
        self.terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        self._episode_terms = torch.zeros(n, len(cfg.rewards), device=dev)
        self._episode_metrics = torch.zeros(n, len(cfg.metrics), device=dev)
        self._invalid_counts = torch.zeros(3, dtype=torch.long, device=dev)  # contact, constraint, non-finite
        self._invalid_envs = torch.zeros((), dtype=torch.long, device=dev)

        self._obs_terms = {
            group: [(name, bind_term(self, t.func, t.params), t) for name, t in terms.items()]
            for group, terms in cfg.observations.items()
        }
        self._reward_terms = [(name, bind_term(self, t.func, t.params), t) for name, t in cfg.rewards.items()]
        reward_dt = self.step_dt if cfg.reward_scale_by_dt else 1.0
        self._reward_weights = torch.tensor([t.weight * reward_dt for t in cfg.rewards.values()], device=dev)
        self._termination_terms = [(name, bind_term(self, t.func, t.params), t) for name, t in cfg.terminations.items()]
        self._metric_terms = [(name, bind_term(self, t.func, t.params), t) for name, t in cfg.metrics.items()]
        self._metric_final = torch.tensor([t.final for t in cfg.metrics.values()], dtype=torch.bool, device=dev)
        self._events = {
            mode: [(k, e) for k, e in cfg.events.items() if e.mode == mode] for mode in ("startup", "reset", "interval")
        }
        self._event_timers = {k: self._draw_interval(e.interval_range_s) for k, e in self._events["interval"]}
        self._curriculum = {name: (c.func, c.params) for name, c in cfg.curriculum.items()}
        self._curriculum_levels = torch.zeros(len(cfg.curriculum), device=dev)
        self._command_timers = {
            name: self._draw_interval(c.resampling_time_range_s) for name, c in cfg.commands.items()
        }

        if self.terrain is not None:
            self.terrain.check(self)
        all_envs = torch.ones(n, dtype=torch.bool, device=dev)
        for _, event in self._events["startup"]:
            event.func(self, all_envs, **event.params)
        self.reset()
        self.observation_spec = {group: tuple(value.shape[1:]) for group, value in self.obs.items()}
        self.obs_term_shapes = {
            group: {name: tuple(term(self).shape[1:]) for name, term, _ in terms}
            for group, terms in self._obs_terms.items()
        }
        if verbose:
            print_term_tables(self)

    # ----------------------------------------------------------------------------- public API

    def reset(self, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Resets the envs where `mask` (num_envs,) bool is True (all when None) and returns the
        observations of every env; the others keep their state."""
        every_env = mask is None
        if every_env:
            mask = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        elif mask.shape != (self.num_envs,) or mask.dtype != torch.bool or mask.device != self.device:
            raise ValueError(
                f"mask: expected a bool tensor of shape ({self.num_envs},) on {self.device}, "
                f"got {mask.dtype} {tuple(mask.shape)} on {mask.device}"
            )
        self._reset_envs(mask)
        obs = self._compute_obs()
        if not every_env:  # the other envs keep their observations too (fresh noise included)
            obs = {group: torch.where(mask[:, None], value, self.obs[group]) for group, value in obs.items()}
        self._store_obs(obs)
        return self.obs

    def step(self, actions: torch.Tensor):
        self._check_actions(actions)
        if not self.capture:
            return self._step_fn(actions)
        if self._graph is None:
            out = self._step_fn(actions)  # first step outside the graph: compiles and loads every kernel
            self._capture_step()
            return out
        self._graph_in.copy_(actions)
        self._graph.replay()
        return self._graph_out

    def _capture_step(self) -> None:
        """Records `_step` reading `_graph_in` into a CUDA graph; its outputs become static buffers."""
        torch.cuda.synchronize(self.device)
        current = self.obs
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.rng)
        with torch.cuda.graph(graph):
            self._graph_out = self._step_fn(self._graph_in)
        self._graph = graph
        self._store_obs(current)  # the capture computed nothing: keep the real observations

    def _store_obs(self, obs: dict[str, torch.Tensor]) -> None:
        """Makes `obs` the current observations; once the step is captured, by copying them into
        the graph's output buffers, which every replay updates."""
        if self._graph_out is None:
            self.obs = obs
            return
        for group, value in obs.items():
            self._graph_out[0][group].copy_(value)
        self.obs = self._graph_out[0]

    def _step(self, actions: torch.Tensor):
        # Non-finite actions are treated as 0 (documented); clipping and scaling as the ActionCfg says.
        action = torch.nan_to_num(actions.float(), nan=0.0, posinf=0.0, neginf=0.0)
        clip = self.cfg.actions.clip
        if clip is not None:
            action = action.clamp(-clip, clip)
        self.action.copy_(action)
        if self.low_level is None:
            self.drive_joints(self.cfg.actions.scale * self._delayed(action))
        else:
            self.low_level.drive(self, self.cfg.actions.scale * action)
        self.episode_length += 1
        self.step_count += 1

        # A broken env (buffer overflow; diverged physics; NaN/inf in its observations or rewards)
        # ends its episode without reward or bootstrap, is reset below and counted.
        reasons = self.sim.check_worlds()  # (num_envs, 3): contact overflow, constraint overflow, diverged
        final_obs = self._compute_obs()
        for value in final_obs.values():
            reasons[:, 2] |= ~torch.isfinite(value).all(dim=1)
        terminated, time_out = self._compute_terminations()
        self.terminated.copy_(terminated | reasons.any(dim=1))
        values = self._reward_values()
        reasons[:, 2] |= ~torch.isfinite(values).all(dim=1)
        invalid = reasons.any(dim=1)
        self._invalid_counts += reasons.sum(dim=0)
        self._invalid_envs += invalid.sum()
        self.terminated |= invalid
        truncated = time_out & ~self.terminated
        reward = self._weigh_rewards(values, invalid)
        self._accumulate_metrics(invalid)
        done = self.terminated | truncated
        final_obs = {
            group: torch.nan_to_num(value, nan=0.0, posinf=0.0, neginf=0.0) for group, value in final_obs.items()
        }
        episode = {
            "done": done,
            "return": self.episode_return.clone(),
            "length": self.episode_length.clone(),
            "terms": {name: self._episode_terms[:, i].clone() for i, (name, _, _) in enumerate(self._reward_terms)},
            "metrics": {
                name: self._episode_metrics[:, i] / (1 if cfg.final else self.episode_length.clamp(min=1))
                for i, (name, _, cfg) in enumerate(self._metric_terms)
            },
        }
        self._reset_envs(done)
        self._run_interval_events()
        self._resample_commands()
        self.obs = self._compute_obs()
        extras = {"final_obs": final_obs, "episode": episode, "log": self._log()}
        return self.obs, reward, self.terminated.clone(), truncated, extras

    @property
    def invalid_resets(self) -> torch.Tensor:
        """Device scalar: envs reset so far because their simulation broke (no host sync)."""
        return self._invalid_envs.clone()

    def report_invalid(self) -> list[str]:
        """Host-side summary of envs reset because the simulation broke, by reason (an env with
        several reasons counts under each), with the option to fix it.

        Reads three counters from the device (a sync): call it once per iteration, not per step.
        """
        contact, constraint, nonfinite = (int(c) for c in self._invalid_counts.tolist())
        lines = []
        if contact:
            lines.append(f"{contact} env resets after contact overflow: {self.sim.overflow_hint('contact')}")
        if constraint:
            lines.append(f"{constraint} env resets after constraint overflow: {self.sim.overflow_hint('constraint')}")
        if nonfinite:
            lines.append(
                f"{nonfinite} env resets after diverged physics (NaN/inf, or |qvel| > sim.max_qvel = "
                f"{self.sim.cfg.max_qvel:g}) or NaN/inf in observations or rewards"
            )
        return lines

    def state_dict(self) -> dict[str, Any]:
        """Everything that decides the next steps: simulator state, episode buffers, the state of
        stateful terms (and of the low-level policy and terrain curriculum), event timers, the last
        observations and the random generator."""
        return {
            "num_envs": self.num_envs,
            "sim": self.sim.state_dict(),
            "buffers": {name: getattr(self, name).clone() for name in self._BUFFERS},
            "terms": {key: term.state_dict() for key, term in self._all_terms()},
            "event_timers": {name: timer.clone() for name, timer in self._event_timers.items()},
            "command_timers": {name: timer.clone() for name, timer in self._command_timers.items()},
            "obs": {group: value.clone() for group, value in self.obs.items()},
            "rng": self.rng.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a `state_dict` in place; the env then continues exactly where it was saved."""
        if state["num_envs"] != self.num_envs:
            raise ConfigError(
                f"--num-envs: the checkpoint's env state has {state['num_envs']} envs, this run has {self.num_envs}"
            )
        missing = [name for name in self._BUFFERS if name not in state["buffers"]]
        missing += [key for key, _ in self._all_terms() if key not in state["terms"]]
        if missing:
            raise ConfigError(f"--resume: the checkpoint's env state lacks {missing} (written by an older phalanx)")
        for name in self._BUFFERS:
            here, saved = tuple(getattr(self, name).shape), tuple(state["buffers"][name].shape)
            if here != saved:
                raise ConfigError(
                    f"--resume: the checkpoint's env state has {name} of shape {saved}, this task makes {here} "
                    "(its metrics or action delay differ from the checkpoint's)"
                )
        self.sim.load_state_dict(state["sim"])
        for name in self._BUFFERS:
            getattr(self, name).copy_(state["buffers"][name])
        for key, term in self._all_terms():
            term.load_state_dict(state["terms"][key])
        for name, timer in self._event_timers.items():
            timer.copy_(state["event_timers"][name])
        for name, timer in self._command_timers.items():
            timer.copy_(state["command_timers"][name])
        self._store_obs({group: value.to(self.device) for group, value in state["obs"].items()})
        self.rng.set_state(state["rng"])

    def command(self, name: str) -> torch.Tensor:
        """(num_envs, d) the current value of the named command."""
        return self.command_term(name).command

    def command_term(self, name: str) -> CommandTerm:
        """The named command's term (its ranges and state, e.g. for a curriculum)."""
        if name not in self._command_terms:
            raise ValueError(f"task {self.cfg.name!r}: no command {name!r}; it has {list(self._command_terms)}")
        return self._command_terms[name][0]

    def episode_reward_sum(self, name: str) -> torch.Tensor:
        """(num_envs,) the named reward term's weighted sum over each env's current episode."""
        names = list(self.cfg.rewards)
        if name not in names:
            raise ValueError(f"task {self.cfg.name!r}: no reward term {name!r}; it has {names}")
        return self._episode_terms[:, names.index(name)]

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
            ids = self._matching(pattern, self.sim.joint_names, "joint pattern", "joint")
            self._joint_ids_cache[pattern] = ids
        return ids

    def geom_ids(self, pattern: str) -> torch.Tensor:
        """Indices into `sim.geom_names` of the geoms whose names match `pattern`."""
        return self._matching(pattern, self.sim.geom_names, "geom pattern", "geom")

    # ----------------------------------------------------------------------------- internals

    _BUFFERS = (
        "action", "episode_length", "step_count", "episode_return", "terminated",
        "_episode_terms", "_episode_metrics", "_invalid_counts", "_invalid_envs",
        "_action_delay", "_action_history", "_curriculum_levels",
    )  # fmt: skip

    def _all_terms(self) -> list[tuple[str, Any]]:
        """The parts whose tensor attributes are env state: terms, the low-level policy, the terrain."""
        terms = [(f"obs/{group}/{name}", term) for group, ts in self._obs_terms.items() for name, term, _ in ts]
        terms += [(f"reward/{name}", term) for name, term, _ in self._reward_terms]
        terms += [(f"metric/{name}", term) for name, term, _ in self._metric_terms]
        terms += [(f"command/{name}", term) for name, (term, _) in self._command_terms.items()]
        terms += [] if self.low_level is None else [("low_level", self.low_level)]
        terms += [] if self.terrain is None else [("terrain", self.terrain)]
        return terms + [(f"termination/{name}", term) for name, term, _ in self._termination_terms]

    def _select_actuators(self, pattern: str) -> torch.Tensor:
        return self._matching(pattern, self.sim.actuator_names, "actions.actuators:", "actuator")

    def _matching(self, pattern: str, names: list[str], what: str, noun: str) -> torch.Tensor:
        """Indices of the names that fully match the regular expression; none is an error."""
        ids = [i for i, name in enumerate(names) if re.fullmatch(pattern, name)]
        if not ids:
            raise ValueError(f"{what} {pattern!r} matches no {noun}; the model has {names}")
        return torch.tensor(ids, dtype=torch.long, device=self.device)

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

    def drive_joints(self, scaled_action: torch.Tensor) -> None:
        """Sets the driven actuators to their offset + `scaled_action` and steps the physics once."""
        self.sim.ctrl[:, self.actuator_ids] = self.joint_action_offset + scaled_action
        self.sim.step()

    def obs_term_value(self, value: torch.Tensor, cfg: ObsTermCfg) -> torch.Tensor:
        """An observation term's value after its scale, clip and noise."""
        if cfg.scale != 1.0:
            value = value * cfg.scale
        if cfg.clip is not None:
            value = value.clamp(*cfg.clip)
        if cfg.noise:
            value = value + self._noise(value.shape, cfg.noise)
        return value

    def _compute_obs(self) -> dict[str, torch.Tensor]:
        return {
            group: torch.cat([self.obs_term_value(term(self), cfg) for _, term, cfg in terms], dim=-1)
            for group, terms in self._obs_terms.items()
        }

    def _compute_terminations(self) -> tuple[torch.Tensor, torch.Tensor]:
        terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        time_out = torch.zeros_like(terminated)
        for _, term, cfg in self._termination_terms:
            if cfg.time_out:
                time_out |= term(self)
            else:
                terminated |= term(self)
        return terminated, time_out

    def _delayed(self, action: torch.Tensor) -> torch.Tensor:
        """The action each env applies now: this step's, or with a delay the one from `delay` steps ago."""
        if len(self._action_history) == 1:
            return action
        self._action_history.copy_(torch.roll(self._action_history, 1, dims=0))
        self._action_history[0] = action
        return self._action_history[self._action_delay, self._env_ids]

    def _reward_values(self) -> torch.Tensor:
        """(num_envs, num_terms) the reward terms' values before weights."""
        return torch.stack([term(self) for _, term, _ in self._reward_terms], dim=1)

    def _weigh_rewards(self, values: torch.Tensor, invalid: torch.Tensor) -> torch.Tensor:
        """Weighted sum per env (0 for invalid envs); accumulates the episode sums."""
        weighted = torch.nan_to_num(values * self._reward_weights).masked_fill_(invalid[:, None], 0.0)
        self._episode_terms += weighted
        reward = weighted.sum(dim=1)
        self.episode_return += reward
        return reward

    def _accumulate_metrics(self, invalid: torch.Tensor) -> None:
        """Adds this step's metric values to the episode sums (0 for a broken env's step)."""
        if self._metric_terms:
            values = torch.stack([term(self) for _, term, _ in self._metric_terms], dim=1)
            values = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0).masked_fill_(invalid[:, None], 0.0)
            self._episode_metrics.copy_(torch.where(self._metric_final, values, self._episode_metrics + values))

    def _reset_envs(self, mask: torch.Tensor) -> None:
        for i, (func, params) in enumerate(self._curriculum.values()):
            self._curriculum_levels[i] = func(self, mask, **params)
        if self.terrain is not None:
            self.terrain.before_reset(self, mask)
        self.sim.reset_(mask)
        if self.terrain is not None:
            self.terrain.place(self, mask)
        for _, event in self._events["reset"]:
            event.func(self, mask, **event.params)
        for name, (term, cfg) in self._command_terms.items():
            term.resample(self, mask)
            term.update(self)
            timer = self._command_timers[name]
            timer.copy_(torch.where(mask, self._draw_interval(cfg.resampling_time_range_s), timer))
        self.episode_length.masked_fill_(mask, 0)
        self.episode_return.masked_fill_(mask, 0.0)
        self._episode_terms.masked_fill_(mask[:, None], 0.0)
        self._episode_metrics.masked_fill_(mask[:, None], 0.0)
        self.action.masked_fill_(mask[:, None], 0.0)
        low, high = self.cfg.actions.delay_range
        if high > 0:
            self._action_history.masked_fill_(mask[None, :, None], 0.0)
            delay = torch.randint(low, high + 1, (self.num_envs,), device=self.device, generator=self.rng)
            self._action_delay.copy_(torch.where(mask, delay, self._action_delay))
        for group in self._obs_terms.values():
            for _, term, _ in group:
                term.reset(self, mask)
        for _, term, _ in self._reward_terms + self._termination_terms + self._metric_terms:
            term.reset(self, mask)
        if self.low_level is not None:
            self.low_level.reset(self, mask)

    @torch.compiler.disable  # one tiny op; compiling it would specialize on every (low, high) pair
    def uniform(self, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
        """Uniform samples in [low, high) from the env's generator (for events and terms)."""
        return low + (high - low) * torch.rand(shape, device=self.device, generator=self.rng)

    @torch.compiler.disable  # one random op from the env's generator (as the events draw theirs)
    def _noise(self, shape: torch.Size, scale: float) -> torch.Tensor:
        return scale * (2 * torch.rand(shape, device=self.device, generator=self.rng) - 1)

    def _draw_interval(self, range_s: tuple[float, float]) -> torch.Tensor:
        """(num_envs,) seconds until an event fires or a command is resampled, uniform in range_s."""
        low, high = range_s
        return low + (high - low) * torch.rand(self.num_envs, device=self.device, generator=self.rng)

    def _run_interval_events(self) -> None:
        for name, event in self._events["interval"]:
            event.func(self, self._due(self._event_timers[name], event.interval_range_s), **event.params)

    def _resample_commands(self) -> None:
        for name, (term, cfg) in self._command_terms.items():
            term.resample(self, self._due(self._command_timers[name], cfg.resampling_time_range_s))
            term.update(self)

    def _due(self, timer: torch.Tensor, range_s: tuple[float, float]) -> torch.Tensor:
        """Counts `timer` (num_envs,) down one env step and returns the envs whose time ran out;
        those draw their next time from `range_s`."""
        timer -= self.step_dt
        due = timer <= 0.0
        timer.copy_(torch.where(due, self._draw_interval(range_s), timer))
        return due

    def _log(self) -> dict[str, torch.Tensor]:
        log = {} if self.terrain is None else {"terrain_level": self.terrain.mean_level()}
        return log | {name: self._curriculum_levels[i] for i, name in enumerate(self._curriculum)}
