"""A frozen low-level policy that turns an env's actions (its commands) into actuator targets:
hierarchical control, as Isaac Lab's PreTrainedPolicyAction (see `LowLevelPolicyCfg`). The
policy itself is resolved above the env layer (`phalanx.make`) and handed in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from phalanx.core.compiling import compile_boundary
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ActionCfg, LowLevelPolicyCfg, ObsTermCfg, TaskCfg, Term
from phalanx.envs.mdp import observations
from phalanx.envs.tensor_state import load_checked
from phalanx.envs.term_group import noise_of, observed_value
from phalanx.envs.terms import bind_term

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


@dataclass
class LowLevelSource:
    """What the env needs of a frozen policy: the env config it was trained on (its
    observations and actions) and `make_actor(obs_dim, action_dim, device, seed)`, which
    returns a module from those observations to mean actions."""

    env_cfg: TaskCfg
    make_actor: Callable[[int, int, torch.device, int], torch.nn.Module]


class LowLevelPolicy(Term):
    """Computes the low-level task's "policy" observations on this env (its `last_action` term
    reads the low-level's own last action; its command is the env's held `command`), runs the
    frozen actor and sets the actuators as the low-level task's ActionCfg does, `decimation`
    times per env step."""

    def __init__(self, env: TaskEnv, cfg: LowLevelPolicyCfg, source: LowLevelSource):
        from phalanx.envs.mdp.commands import held_command

        low = source.env_cfg
        if low.actions.low_level is not None:
            raise ConfigError(f"{cfg.task!r} is itself hierarchical", "env.actions.low_level.task")
        self.cfg = cfg
        self.actions: ActionCfg = low.actions
        terms = low.observations["policy"]
        with_history = [name for name, t in terms.items() if t.history != 1]
        if with_history:
            raise ConfigError(
                f"the {cfg.task} policy observes terms with history {with_history}; a low-level policy reads "
                "each term's current value",
                "env.actions.low_level.task",
            )
        observed = {t.params.get("command") for t in terms.values() if t.func is observations.generated_commands}
        if cfg.command not in observed:
            raise ConfigError(
                f"{cfg.command!r} is not a command the {cfg.task} policy observes ({observed})",
                "env.actions.low_level.command",
            )
        if not isinstance(env.command_term(cfg.command), held_command):
            raise ConfigError("must be a held_command for the low-level policy to read", f"env.commands.{cfg.command}")
        self.command_dim = env.command(cfg.command).shape[1]
        self.term_cfgs = terms
        self.terms: list[tuple[Term | None, ObsTermCfg]] = [
            (None if t.func is observations.last_action else bind_term(env, t.func, t.params), t)
            for t in terms.values()
        ]
        self.last_action = torch.zeros(env.num_envs, env.joints.dim, device=env.device)
        self.widths = [self._value(env, term, t).shape[1] for term, t in self.terms]
        """Each term's width in the observation, in order."""
        self.actor = source.make_actor(sum(self.widths), env.joints.dim, env.device, env.seed)

    def _value(
        self, env: TaskEnv, term: Term | None, cfg: ObsTermCfg, noise: torch.Tensor | None = None
    ) -> torch.Tensor:
        return observed_value(env, self.last_action if term is None else term(env), cfg, noise)

    @compile_boundary
    def _noises(self, env: TaskEnv) -> list[torch.Tensor | None]:
        """Per term, a draw of its noise (None: a term without noise), drawn as it is:
        torch.compile runs the physics loop of `drive` as it is and compiles `observe` on its own,
        whose graph, were it to draw, would hold the count of numbers the env step had taken before
        it, a guard that fails at each of the `decimation` calls."""
        return [
            None if not t.noise else noise_of(env, t, (env.num_envs, w))
            for w, (_, t) in zip(self.widths, self.terms, strict=True)
        ]

    def observe(self, env: TaskEnv) -> torch.Tensor:
        """(num_envs, obs_dim) the low-level policy's observation now."""
        noises = self._noises(env)
        values = [self._value(env, term, t, n) for (term, t), n in zip(self.terms, noises, strict=True)]
        return torch.cat(values, dim=-1)

    def drive(self, env: TaskEnv, command: torch.Tensor) -> None:
        """Holds `command` and steps the physics `decimation` times under the low-level policy."""
        env.command(self.cfg.command).copy_(command)
        for _ in range(self.cfg.decimation):
            action = self.actor(self.observe(env))
            if self.actions.clip is not None:
                action = action.clamp(-self.actions.clip, self.actions.clip)
            self.last_action.copy_(action)
            env.joints.drive(env.sim, self.actions.scale * action)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.last_action.masked_fill_(mask[:, None], 0.0)
        for term, _ in self.terms:
            if term is not None:
                term.reset(env, mask)

    def state_dict(self) -> dict[str, dict]:
        terms = {str(i): term.state_dict() for i, (term, _) in enumerate(self.terms) if term is not None}
        return {"last_action": self.last_action.clone(), "terms": terms}

    def load_state_dict(self, state: dict[str, dict]) -> None:
        load_checked({"last_action": self.last_action}, state, "actions/low_level/")
        for i, (term, _) in enumerate(self.terms):
            if term is not None:
                term.load_state_dict(state["terms"][str(i)])
