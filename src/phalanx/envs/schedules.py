"""What an env does at resets and on per-env timers: events, commands and curricula, each with
an explicit `state_dict` (its timers or levels)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import CommandTerm, CommandTermCfg, CurriculumTermCfg, EventTermCfg
from phalanx.envs.tensor_state import load_checked
from phalanx.envs.term_group import TermGroup

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def draw_interval(env: TaskEnv, range_s: tuple[float, float]) -> torch.Tensor:
    """(num_envs,) seconds until an event fires or a command is resampled, uniform in range_s."""
    return env.uniform((env.num_envs,), *range_s)


def due(env: TaskEnv, timer: torch.Tensor, range_s: tuple[float, float]) -> torch.Tensor:
    """Counts `timer` (num_envs,) down one env step and returns the envs whose time ran out;
    those draw their next time from `range_s`."""
    timer -= env.step_dt
    fired = timer <= 0.0
    timer.copy_(torch.where(fired, draw_interval(env, range_s), timer))
    return fired


class Events:
    """Startup events run once at creation, reset events at every reset, interval events when
    an env's timer runs out."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, EventTermCfg]):
        self.by_mode = {
            mode: {k: e for k, e in cfgs.items() if e.mode == mode} for mode in ("startup", "reset", "interval")
        }
        self.timers = {name: draw_interval(env, e.interval_range_s) for name, e in self.by_mode["interval"].items()}

    def startup(self, env: TaskEnv) -> None:
        every_env = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
        for event in self.by_mode["startup"].values():
            event.func(env, every_env, **event.params)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        for event in self.by_mode["reset"].values():
            event.func(env, mask, **event.params)

    def step(self, env: TaskEnv) -> None:
        for name, event in self.by_mode["interval"].items():
            event.func(env, due(env, self.timers[name], event.interval_range_s), **event.params)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: timer.clone() for name, timer in self.timers.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        load_checked(self.timers, state, "events/")


class Commands(TermGroup):
    """Command terms, each reset (`Term.reset`) and resampled at reset, resampled when its per-env
    timer runs out, and updated every step."""

    cfgs: list[CommandTermCfg]
    terms: list[CommandTerm]

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, CommandTermCfg]):
        super().__init__(env, cfgs, "commands")
        self.timers = [draw_interval(env, cfg.resampling_time_range_s) for cfg in self.cfgs]

    def term(self, env: TaskEnv, name: str) -> CommandTerm:
        if name not in self.names:
            raise ValueError(f"task {env.cfg.name!r}: no command {name!r}; it has {self.names}")
        return self.terms[self.names.index(name)]

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        for term, cfg, timer in zip(self.terms, self.cfgs, self.timers, strict=True):
            term.reset(env, mask)
            term.resample(env, mask)
            term.update(env)
            timer.copy_(torch.where(mask, draw_interval(env, cfg.resampling_time_range_s), timer))

    def step(self, env: TaskEnv) -> None:
        for term, cfg, timer in zip(self.terms, self.cfgs, self.timers, strict=True):
            term.resample(env, due(env, timer, cfg.resampling_time_range_s))
            term.update(env)

    def buffers(self) -> dict[str, torch.Tensor]:
        return {f"timer/{name}": timer for name, timer in zip(self.names, self.timers, strict=True)}


class Curriculum:
    """Curricula, run at every reset before the envs lose their episode; each returns its level."""

    def __init__(self, env: TaskEnv, cfgs: Mapping[str, CurriculumTermCfg]):
        self.cfgs = dict(cfgs)
        self.levels = torch.zeros(len(cfgs), device=env.device)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        for i, cfg in enumerate(self.cfgs.values()):
            self.levels[i] = cfg.func(env, mask, **cfg.params)

    def log(self) -> dict[str, torch.Tensor]:
        return {name: self.levels[i] for i, name in enumerate(self.cfgs)}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"levels": self.levels.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        load_checked({"levels": self.levels}, state, "curriculum/")
