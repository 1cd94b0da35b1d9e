"""skrl (2.x, PyTorch): a phalanx env as an `skrl.envs.wrappers.torch.Wrapper`, and skrl's PPO
agent with a phalanx task's training defaults:

    from skrl.trainers.torch import SequentialTrainer

    train = phalanx.train_cfg("ant")
    env = SkrlEnv(phalanx.make("ant", num_envs=4096, device="cuda"))
    cfg = {"timesteps": 300 * train.num_steps_per_env, "headless": True}
    SequentialTrainer(env=env, agents=ppo_agent(train, env), cfg=cfg).train()
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from gymnasium import spaces
    from skrl.agents.torch import ExperimentCfg
    from skrl.agents.torch.ppo import PPO, PPO_CFG
    from skrl.envs.wrappers.torch import Wrapper
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.resources.preprocessors.torch import RunningStandardScaler
    from skrl.resources.schedulers.torch import KLAdaptiveLR
    from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
except ImportError:
    raise ImportError("phalanx.wrappers.skrl needs skrl: pip install -e '.[skrl]'") from None
import torch
from torch import nn

from phalanx.core.vec_env import VecEnv
from phalanx.rl.models import mlp
from phalanx.wrappers.spaces import action_box, check_vector_observations, observation_box

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg


class SkrlEnv(Wrapper):
    """`env` (a phalanx `VecEnv`) behind skrl's single-agent env contract. Observations are the
    "policy" group; states, which the critic reads, the "critic" group where the task has one; both
    are copies the next step leaves alone (skrl stores what it acted on after the following step).
    Rewards and flags are (num_envs, 1). Time-outs come as `truncated`, which skrl's PPO bootstraps
    from the value of the next observation: after phalanx's auto-reset, the next episode's first one,
    as with Isaac Lab's envs. The infos are the step's extras; `environment_info="log"` in the
    trainer's config has skrl log the env's scalars (one host read each per step)."""

    def __init__(self, env: VecEnv):
        super().__init__(env)
        self._observation_space = observation_box(env.obs["policy"])
        self._state_space = observation_box(env.obs["critic"]) if "critic" in env.obs else None
        self._action_space = action_box(env)
        self._observations, self._states = self._split(env.obs)

    @property
    def observation_space(self) -> spaces.Box:
        """One env's "policy" observation."""
        return self._observation_space

    @property
    def state_space(self) -> spaces.Box | None:
        """One env's "critic" observation; None where the task has no such group."""
        return self._state_space

    @property
    def action_space(self) -> spaces.Box:
        """One env's action, bounded by the env's action clip (it clamps actions itself)."""
        return self._action_space

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        """Resets every env; returns the observations (num_envs, obs_dim) and no infos."""
        self._observations, self._states = self._split(self._env.reset())
        return self._observations, {}

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, Any]:
        """Returns observations (num_envs, obs_dim), reward (num_envs, 1) float, terminated and
        truncated (num_envs, 1) bool, and the env's extras as infos (read them within the step)."""
        obs, reward, terminated, truncated, extras = self._env.step(actions)
        self._observations, self._states = self._split(obs)
        # Copies: skrl's PPO adds the time-out bootstrap to the reward in place.
        flags = (reward, terminated, truncated)
        return self._observations, *(value.clone().view(-1, 1) for value in flags), extras

    def state(self) -> torch.Tensor | None:
        """(num_envs, state_dim) the "critic" group after the last reset or step; None without one."""
        return self._states

    def render(self, *args, **kwargs) -> None:
        return None

    def close(self) -> None:
        """Nothing to release: the env's buffers go with it."""

    def _split(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
        states = obs["critic"].clone() if self._state_space is not None else None
        return obs["policy"].clone(), states


class GaussianPolicy(GaussianMixin, Model):
    """The actor: an MLP from the observations to the action mean, and one learned log-std per
    action (log(init_noise_std) at first). Actions are not clipped: the env clamps them."""

    def __init__(self, env: SkrlEnv, hidden: tuple[int, ...], activation: str, init_noise_std: float):
        Model.__init__(self, observation_space=env.observation_space, action_space=env.action_space, device=env.device)
        GaussianMixin.__init__(self)
        self.net = mlp(self.num_observations, hidden, self.num_actions, activation)
        self.log_std = nn.Parameter(torch.full((self.num_actions,), math.log(init_noise_std)))

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class Value(DeterministicMixin, Model):
    """The critic: an MLP from the states (the "critic" group) to the value; from the
    observations where the task has no states."""

    def __init__(self, env: SkrlEnv, hidden: tuple[int, ...], activation: str):
        Model.__init__(
            self,
            observation_space=env.observation_space,
            state_space=env.state_space,
            action_space=env.action_space,
            device=env.device,
        )
        DeterministicMixin.__init__(self)
        self.source = "observations" if env.state_space is None else "states"
        size = self.num_observations if env.state_space is None else self.num_states
        self.net = mlp(size, hidden, 1, activation)

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.net(inputs[self.source]), {}


def ppo_cfg(train: TrainCfg, env: SkrlEnv) -> PPO_CFG:
    """skrl's PPO config with a phalanx task's PPO settings. Where skrl differs:
    - the adaptive learning rate (`KLAdaptiveLR`, phalanx's rule and bounds) adapts once per epoch,
      from a KL estimated from log-probabilities, not per minibatch from the Gaussians' exact KL;
    - the clipped value loss is the clipped prediction's alone (phalanx: the larger of both);
    - advantages are normalized over the whole rollout, always, not per minibatch;
    - empirical normalization (`RunningStandardScaler`) clips the normalized values to +-5;
    - checkpoints come every `save_interval * num_steps_per_env` timesteps (skrl counts env steps).
    `train.seed` has no field: `phalanx train` seeds torch, whose generator skrl samples from."""
    check_vector_observations(train, "skrl")
    algo, steps = train.algo, train.num_steps_per_env
    adaptive = algo.schedule == "adaptive"
    kl_schedule = {"kl_threshold": algo.desired_kl, "min_lr": 1e-5, "max_lr": 1e-2}
    cfg = PPO_CFG(
        rollouts=steps,
        learning_epochs=algo.num_learning_epochs,
        mini_batches=algo.num_mini_batches,
        discount_factor=algo.gamma,
        gae_lambda=algo.lam,
        learning_rate=algo.learning_rate,
        learning_rate_scheduler=KLAdaptiveLR if adaptive else None,
        learning_rate_scheduler_kwargs=kl_schedule if adaptive else {},
        grad_norm_clip=algo.max_grad_norm,
        ratio_clip=algo.clip_param,
        value_clip=algo.clip_param if algo.use_clipped_value_loss else 0.0,  # 0: no value clipping
        entropy_loss_scale=algo.entropy_coef,
        value_loss_scale=algo.value_loss_coef,
        time_limit_bootstrap=True,
        experiment=ExperimentCfg(checkpoint_interval=train.save_interval * steps),
    )
    if train.empirical_normalization:
        cfg.observation_preprocessor = RunningStandardScaler
        cfg.observation_preprocessor_kwargs = {"size": env.observation_space, "device": env.device}
        if env.state_space is not None:
            cfg.state_preprocessor = RunningStandardScaler
            cfg.state_preprocessor_kwargs = {"size": env.state_space, "device": env.device}
    return cfg


def ppo_agent(train: TrainCfg, env: SkrlEnv, cfg: PPO_CFG | None = None) -> PPO:
    """skrl's PPO agent on `env` with `cfg` (default `ppo_cfg(train, env)`), the task's network
    sizes (`train.policy`) and a rollout memory of `num_steps_per_env` steps of every env."""
    policy = train.policy
    models = {
        "policy": GaussianPolicy(env, policy.actor_hidden_dims, policy.activation, policy.init_noise_std),
        "value": Value(env, policy.critic_hidden_dims, policy.activation),
    }
    memory = RandomMemory(memory_size=train.num_steps_per_env, num_envs=env.num_envs, device=env.device)
    return PPO(
        models=models,
        memory=memory,
        observation_space=env.observation_space,
        state_space=env.state_space,
        action_space=env.action_space,
        device=env.device,
        cfg=cfg if cfg is not None else ppo_cfg(train, env),
    )


def learn(train: TrainCfg, env: VecEnv, checkpoints: Path) -> None:
    """`phalanx train --trainer skrl`: skrl's PPO agent, configured by `ppo_cfg`, under skrl's
    SequentialTrainer for `train.max_iterations` rollouts and updates. Its checkpoints, which
    `PPO.load` reads, go to `checkpoints`/agent_TIMESTEP.pt (TIMESTEP: env steps per env): skrl
    writes into the checkpoints/ of its experiment directory, here the folder above. skrl's
    TensorBoard writer and progress bar are off: phalanx logs each iteration."""
    skrl_env = SkrlEnv(env)
    cfg = ppo_cfg(train, skrl_env)
    experiment = checkpoints.parent
    cfg.experiment.directory, cfg.experiment.experiment_name = str(experiment.parent), experiment.name
    cfg.experiment.write_interval = 0
    agent = ppo_agent(train, skrl_env, cfg)
    env.watch_action_std(lambda: agent.policy.log_std.exp())
    timesteps = train.max_iterations * train.num_steps_per_env
    # headless: no render calls. The default environment_info, "episode", holds per-env tensors,
    # which skrl's trainer leaves alone: it would read scalars on the host at every step.
    trainer_cfg = SequentialTrainerCfg(
        timesteps=timesteps, headless=True, disable_progressbar=True, close_environment_at_exit=False
    )
    SequentialTrainer(env=skrl_env, agents=agent, cfg=trainer_cfg).train()
    # Under torchrun skrl writes checkpoints on rank 0 alone: it zeroes the other ranks' interval
    # and makes no checkpoint directory for them. It wrote the last one if it fell on the interval.
    if agent.checkpoint_interval > 0 and train.max_iterations % train.save_interval:
        agent.write_checkpoint(timestep=timesteps, timesteps=timesteps)
