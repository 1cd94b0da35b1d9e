"""Term groups: the terms of one section of a `TaskCfg`, built once for the env in config order,
each group with its own per-step work and an explicit `state_dict` (its terms' states and the
per-env buffers it keeps)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch

from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ObsTermCfg, Term
from phalanx.envs.tensor_state import load_checked
from phalanx.envs.terms import FunctionTerm, bind_term

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


class TermGroup:
    """Named terms bound to the env (`bind_term`), in config order; `section` names the group
    in errors (e.g. "rewards")."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, Any], section: str):
        self.section = section
        self.names = list(cfgs)
        self.cfgs = list(cfgs.values())
        self.terms: list[Term] = []
        for name, cfg in zip(self.names, self.cfgs, strict=True):
            with self.naming(name):
                self.terms.append(bind_term(env, cfg.func, cfg.params))

    @contextlib.contextmanager
    def naming(self, name: str) -> Iterator[None]:
        """Turns a term's ValueError (e.g. a root-state term on a fixed-base robot) into a
        ConfigError naming the term's field, `env.SECTION.NAME`."""
        try:
            yield
        except ValueError as error:
            if isinstance(error, ConfigError) and error.field is not None:
                raise
            raise ConfigError(str(error), f"env.{self.section.replace('/', '.')}.{name}") from error

    def check(self, env: TaskEnv) -> None:
        """Evaluates each plain-function term once (they only read state), so that one that
        cannot work on this model is refused by name before the env runs."""
        for name, term, _ in self.items():
            if isinstance(term, FunctionTerm):
                with self.naming(name):
                    term(env)

    def __len__(self) -> int:
        return len(self.terms)

    def items(self) -> Iterator[tuple[str, Term, Any]]:
        return zip(self.names, self.terms, self.cfgs, strict=True)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        for term in self.terms:
            term.reset(env, mask)

    def buffers(self) -> dict[str, torch.Tensor]:
        """The group's own per-env tensors, beside its terms' state."""
        return {}

    def state_dict(self) -> dict[str, dict]:
        return {
            "terms": {name: term.state_dict() for name, term, _ in self.items()},
            "buffers": {name: value.clone() for name, value in self.buffers().items()},
        }

    def load_state_dict(self, state: dict[str, dict]) -> None:
        missing = [name for name in self.names if name not in state["terms"]]
        if missing:
            raise ConfigError(f"--resume: the checkpoint's env state lacks the {self.section} terms {missing}")
        for name, term, _ in self.items():
            term.load_state_dict(state["terms"][name])
        load_checked(self.buffers(), state["buffers"], f"{self.section}/")


def observed_value(
    env: TaskEnv, value: torch.Tensor, cfg: ObsTermCfg, noise: torch.Tensor | None = None
) -> torch.Tensor:
    """An observation term's value after its scale, clip and noise. `noise`: the noise to add, of
    the value's shape, where the caller has drawn it (`noise_of`); else drawn here."""
    if cfg.scale != 1.0:
        value = value * cfg.scale
    if cfg.clip is not None:
        value = value.clamp(*cfg.clip)
    if cfg.noise:
        value = value + (noise_of(env, cfg, tuple(value.shape)) if noise is None else noise)
    return value


def noise_of(env: TaskEnv, cfg: ObsTermCfg, shape: tuple[int, ...]) -> torch.Tensor:
    """A draw of the term's uniform noise in [-noise, noise), of `shape`."""
    return env.uniform(shape, -cfg.noise, cfg.noise)


class ObservationGroup(TermGroup):
    """One observation group: its terms' values, scaled, clipped and noised, each with its history
    (`ObsTermCfg.history`), concatenated along the last axis. A group without terms is
    (num_envs, 0)."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, Any], section: str):
        super().__init__(env, cfgs, section)
        self.past: dict[str, torch.Tensor] = {}
        """Term name -> its previous `history - 1` values (newest first) along the last axis."""
        self.fresh = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        """The envs whose history restarts (every slot the current value) at the next commit."""

    def compute(self, env: TaskEnv, commit: torch.Tensor | None) -> torch.Tensor:
        """The group's value for every env. `commit` (num_envs,) bool: the envs for which this is
        their new observation, whose histories it advances; None: a look that leaves the histories
        as they are (the final observation of an episode, before its reset)."""
        if not self.terms:
            return torch.zeros(env.num_envs, 0, device=env.device)
        values = []
        for name, term, cfg in self.items():
            value = observed_value(env, term(env), cfg)
            values.append(value if cfg.history == 1 else self._with_past(name, value, cfg.history, commit))
        if self.past and commit is not None:
            self.fresh &= ~commit
        return torch.cat(values, dim=-1)

    def _with_past(self, name: str, value: torch.Tensor, history: int, commit: torch.Tensor | None) -> torch.Tensor:
        past = self.past[name]
        repeated = value.repeat(*[1] * (value.dim() - 1), history - 1)
        stacked = torch.cat([value, torch.where(rows(self.fresh, value), repeated, past)], dim=-1)
        if commit is not None:
            past.copy_(torch.where(rows(commit, past), stacked[..., : past.shape[-1]], past))
        return stacked

    def check(self, env: TaskEnv) -> None:
        """Evaluates every term once (they only read state), so that one that cannot work on this
        model is refused by name, and keeps their shapes (`shapes`: one env's value per term, its
        history included). The terms must concatenate along their last axis: vectors
        (num_envs, D) with vectors, images (num_envs, H, W, C) of one size with images."""
        self.shapes: dict[str, tuple[int, ...]] = {}
        for name, term, cfg in self.items():
            with self.naming(name):
                value = observed_value(env, term(env), dataclasses.replace(cfg, noise=None))
            *leading, last = value.shape
            self.shapes[name] = (*leading[1:], last * cfg.history)
            if cfg.history > 1:
                self.past[name] = value.new_zeros(*leading, last * (cfg.history - 1))
        if len({shape[:-1] for shape in self.shapes.values()}) > 1:
            raise ConfigError(
                f"terms of shapes {self.shapes} cannot be concatenated: vectors and images (and images of "
                "different sizes) go in separate groups",
                f"env.{self.section.replace('/', '.')}",
            )

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.fresh |= mask
        super().reset(env, mask)

    def buffers(self) -> dict[str, torch.Tensor]:
        if not self.past:
            return {}
        return {"fresh": self.fresh} | {f"past/{name}": value for name, value in self.past.items()}


def rows(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """(num_envs,) `mask` shaped to select whole rows of `value` (num_envs, ...)."""
    return mask.view(-1, *[1] * (value.dim() - 1))


class Rewards(TermGroup):
    """Reward terms, their weights (times the env dt with `reward_scale_by_dt`) and each env's
    episode sums: per term and in total."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, Any], dt: float):
        super().__init__(env, cfgs, "rewards")
        self.weights = torch.tensor([cfg.weight * dt for cfg in self.cfgs], device=env.device)
        self.episode_sums = torch.zeros(env.num_envs, len(self), device=env.device)
        self.episode_return = torch.zeros(env.num_envs, device=env.device)

    def values(self, env: TaskEnv) -> torch.Tensor:
        """(num_envs, num_terms) the terms' values before weights."""
        return torch.stack([term(env) for term in self.terms], dim=1)

    def weigh(self, values: torch.Tensor, invalid: torch.Tensor) -> torch.Tensor:
        """The weighted sum per env (0 for invalid envs); accumulates the episode sums."""
        weighted = torch.nan_to_num(values * self.weights).masked_fill_(invalid[:, None], 0.0)
        self.episode_sums += weighted
        reward = weighted.sum(dim=1)
        self.episode_return += reward
        return reward

    def episode_sum(self, name: str) -> torch.Tensor:
        return self.episode_sums[:, self.names.index(name)]

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.episode_sums.masked_fill_(mask[:, None], 0.0)
        self.episode_return.masked_fill_(mask, 0.0)
        super().reset(env, mask)

    def buffers(self) -> dict[str, torch.Tensor]:
        return {"episode_sums": self.episode_sums, "episode_return": self.episode_return}


class Terminations(TermGroup):
    def compute(self, env: TaskEnv) -> tuple[torch.Tensor, torch.Tensor]:
        """(terminated, time_out), (num_envs,) bool each."""
        terminated = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        time_out = torch.zeros_like(terminated)
        for _, term, cfg in self.items():
            if cfg.time_out:
                time_out |= term(env)
            else:
                terminated |= term(env)
        return terminated, time_out


class Metrics(TermGroup):
    """Metric terms and each env's episode accumulators: a sum over the episode's steps, or the
    last value for `final` metrics."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, Any]):
        super().__init__(env, cfgs, "metrics")
        self.final = torch.tensor([cfg.final for cfg in self.cfgs], dtype=torch.bool, device=env.device)
        self.episode_values = torch.zeros(env.num_envs, len(self), device=env.device)

    def accumulate(self, env: TaskEnv, invalid: torch.Tensor) -> None:
        """Adds this step's values to the episode sums (0 for a broken env's step)."""
        if self.terms:
            values = torch.stack([term(env) for term in self.terms], dim=1)
            values = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0).masked_fill_(invalid[:, None], 0.0)
            self.episode_values.copy_(torch.where(self.final, values, self.episode_values + values))

    def episode(self, episode_length: torch.Tensor) -> dict[str, torch.Tensor]:
        """name -> (num_envs,) the mean over each env's episode so far (or the last value)."""
        steps = episode_length.clamp(min=1)
        return {
            name: self.episode_values[:, i] / (1 if cfg.final else steps)
            for i, (name, _, cfg) in enumerate(self.items())
        }

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.episode_values.masked_fill_(mask[:, None], 0.0)
        super().reset(env, mask)

    def buffers(self) -> dict[str, torch.Tensor]:
        return {"episode_values": self.episode_values}
