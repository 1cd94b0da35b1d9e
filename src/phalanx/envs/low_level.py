"""A frozen low-level policy that turns an env's actions (its commands) into actuator targets:
hierarchical control, as Isaac Lab's PreTrainedPolicyAction (see `LowLevelPolicyCfg`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import ActionCfg, LowLevelPolicyCfg, ObsTermCfg, Term
from phalanx.envs.mdp import observations
from phalanx.errors import ConfigError

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


class LowLevelPolicy(Term):
    """Computes the low-level task's "policy" observations on this env (its `last_action` term
    reads the low-level's own last action; its command is the env's held `command`), runs the
    checkpoint's actor (mean action, normalized observations if it was trained so) and sets the
    actuators as the low-level task's ActionCfg does, `decimation` times per env step."""

    def __init__(self, env: TaskEnv, cfg: LowLevelPolicyCfg):
        from phalanx.envs.mdp.commands import held_command
        from phalanx.envs.registry import task_cfg  # the registry imports the env module
        from phalanx.envs.task_env import bind_term
        from phalanx.rl.config import default_train_cfg
        from phalanx.rl.models import mlp
        from phalanx.rl.normalizer import EmpiricalNormalizer

        if cfg.decimation < 1:
            raise ConfigError(f"actions.low_level.decimation: must be >= 1, got {cfg.decimation}")
        low = task_cfg(cfg.task)
        if low.actions.low_level is not None:
            raise ConfigError(f"actions.low_level.task: {cfg.task!r} is itself hierarchical")
        self.cfg = cfg
        self.actions: ActionCfg = low.actions
        terms = low.observations["policy"]
        observed = {t.params.get("command") for t in terms.values() if t.func is observations.generated_commands}
        if cfg.command not in observed:
            raise ConfigError(
                f"actions.low_level.command: {cfg.command!r} is not a command the {cfg.task} policy "
                f"observes ({observed})"
            )
        if not isinstance(env.command_term(cfg.command), held_command):
            raise ConfigError(f"commands.{cfg.command}: must be a held_command for the low-level policy to read")
        self.command_dim = env.command(cfg.command).shape[1]
        self.terms: list[tuple[Term | None, ObsTermCfg]] = [
            (None if t.func is observations.last_action else bind_term(env, t.func, t.params), t)
            for t in terms.values()
        ]
        train = default_train_cfg(cfg.task)
        policy, normalize, state = train.policy, train.empirical_normalization, None
        if cfg.checkpoint is not None:
            from phalanx.rl.checkpoint import CheckpointError, load_checkpoint, load_weights
            from phalanx.rl.config import PolicyCfg

            try:
                state = load_checkpoint(cfg.checkpoint, cfg.task)
            except CheckpointError as error:
                raise ConfigError(f"--low-level-checkpoint: {error}") from None
            policy = PolicyCfg(**state["config"]["policy"])
            normalize = state["config"]["empirical_normalization"]
        self.last_action = torch.zeros(env.num_envs, env.joint_action_dim, device=env.device)
        obs_dim = sum(self._value(env, term, t).shape[1] for term, t in self.terms)
        with torch.random.fork_rng(devices=[]):  # an untrained actor is the same for the same env seed
            torch.default_generator.manual_seed(env.seed)  # the CPU generator only, restored after
            actor = mlp(obs_dim, policy.actor_hidden_dims, env.joint_action_dim, policy.activation)
        self.actor = actor.to(env.device)
        self.normalizer = EmpiricalNormalizer(obs_dim).to(env.device) if normalize else None
        if state is not None:
            actor = {k.removeprefix("actor."): v for k, v in state["policy"].items() if k.startswith("actor.")}
            source = f"--low-level-checkpoint: {cfg.checkpoint} on {cfg.task}'s observations ({obs_dim})"
            load_weights(self.actor, actor, f"{source}: the actor")
            if self.normalizer is not None:
                load_weights(self.normalizer, state["obs_norm"], f"{source}: the normalizer")
        self.actor.requires_grad_(False)

    def _value(self, env: TaskEnv, term: Term | None, cfg: ObsTermCfg) -> torch.Tensor:
        return env.obs_term_value(self.last_action if term is None else term(env), cfg)

    def observe(self, env: TaskEnv) -> torch.Tensor:
        """(num_envs, obs_dim) the low-level policy's observation now."""
        obs = torch.cat([self._value(env, term, t) for term, t in self.terms], dim=-1)
        return obs if self.normalizer is None else self.normalizer(obs)

    def drive(self, env: TaskEnv, command: torch.Tensor) -> None:
        """Holds `command` and steps the physics `decimation` times under the low-level policy."""
        env.command(self.cfg.command).copy_(command)
        for _ in range(self.cfg.decimation):
            action = self.actor(self.observe(env))
            if self.actions.clip is not None:
                action = action.clamp(-self.actions.clip, self.actions.clip)
            self.last_action.copy_(action)
            env.drive_joints(self.actions.scale * action)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.last_action.masked_fill_(mask[:, None], 0.0)
        for term, _ in self.terms:
            if term is not None:
                term.reset(env, mask)
