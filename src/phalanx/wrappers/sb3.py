"""Stable-Baselines3 (2.x): a phalanx env as `stable_baselines3.common.vec_env.VecEnv`, and PPO's
arguments from a phalanx task's training defaults:

    from stable_baselines3 import PPO

    train = phalanx.train_cfg("cartpole")
    env = Sb3VecEnv(phalanx.make("cartpole", num_envs=64, device="cpu"))
    model = PPO(env=env, device="cpu", **ppo_kwargs(train, env.num_envs))
    model.learn(total_timesteps=150 * train.num_steps_per_env * env.num_envs)
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.utils import ConstantSchedule
    from stable_baselines3.common.vec_env import VecEnv, VecNormalize
except ImportError:
    raise ImportError("phalanx.wrappers.sb3 needs stable-baselines3: pip install -e '.[sb3]'") from None
import numpy as np
import torch

from phalanx.core import vec_env
from phalanx.rl.losses import gaussian_kl
from phalanx.rl.models import ACTIVATIONS
from phalanx.wrappers.spaces import action_box, check_vector_observations, observation_box

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg


class Sb3VecEnv(VecEnv):
    """`env` (a phalanx `VecEnv`) behind SB3's VecEnv contract, in NumPy: each step copies the
    "policy" observations (a flat Box; SB3's PPO feeds the same one to the actor and the critic, so a
    "critic" group is left out), rewards and dones to the host, one host sync per step. Done envs
    report, as SB3's VecEnvs do, `infos[i]["terminal_observation"]`, `"TimeLimit.truncated"` (which
    SB3's PPO bootstraps) and `"episode"` ("r" return, "l" length, as SB3's Monitor writes it).
    The batch is one phalanx env: `get_attr`, `set_attr` and `env_method` act on the whole batch (no
    subset of `indices`); `seed(s)` reseeds the env's random numbers at the next `reset`."""

    def __init__(self, env: vec_env.VecEnv):
        self.env = env
        # SB3 requires a finite action Box; an env without an action clip gets the widest float32 one.
        observation_space = observation_box(env.obs["policy"])
        action_space = action_box(env, unbounded=float(np.finfo(np.float32).max))
        super().__init__(env.num_envs, observation_space, action_space)
        self._actions: torch.Tensor | None = None

    def reset(self) -> np.ndarray:
        """Resets every env; returns the "policy" observations, shape (num_envs, obs_dim)."""
        if self._seeds[0] is not None:
            self.env.manual_seed(self._seeds[0])
        self._reset_seeds()
        return _host(self.env.reset()["policy"])

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = torch.as_tensor(actions, dtype=torch.float32, device=self.env.device)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Steps every env with the actions of `step_async`.

        Returns:
            obs: (num_envs, obs_dim) float32, after the auto-reset of done envs.
            reward: (num_envs,) float32.
            done: (num_envs,) bool, the episode ended (terminated or timed out).
            infos: one dict per env, empty but where done (see the module's description).
        Each array is a copy the next step leaves alone (SB3 keeps the observations and adds the
        time-out bootstrap to the rewards in place)."""
        obs, reward, terminated, truncated, extras = self.env.step(self._actions)
        episode = extras["episode"]
        done = _host(episode["done"])
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            final_obs = _host(extras["final_obs"]["policy"])
            time_out = _host(truncated & ~terminated)
            returns, lengths = _host(episode["return"]), _host(episode["length"])
            for i in np.flatnonzero(done):
                infos[i] = {
                    "terminal_observation": final_obs[i],
                    "TimeLimit.truncated": bool(time_out[i]),
                    "episode": {"r": float(returns[i]), "l": int(lengths[i])},
                }
        return _host(obs["policy"]), _host(reward), done, infos

    def close(self) -> None:
        """Nothing to release: the phalanx env belongs to its maker."""

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The phalanx env's attribute once per index; "render_mode" is None (SB3 does not render
        phalanx envs)."""
        value = None if attr_name == "render_mode" else getattr(self.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        self._check_all(indices)
        setattr(self.env, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: Any = None, **method_kwargs) -> list[Any]:
        """Calls the phalanx env's method once; its result for every env."""
        self._check_all(indices)
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in range(self.num_envs)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """False for every env: a phalanx env has no Gymnasium wrappers."""
        return [False for _ in self._get_indices(indices)]

    def _check_all(self, indices: Any) -> None:
        if indices is not None and sorted(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError("Sb3VecEnv: the batch is one phalanx env; set_attr and env_method apply to every env")


def _host(value: torch.Tensor) -> np.ndarray:
    """A NumPy copy on the host: on the CPU too, where `.numpy()` alone would alias the env's buffer."""
    return value.to("cpu", copy=True).numpy()


def ppo_kwargs(train: TrainCfg, num_envs: int) -> dict[str, Any]:
    """`stable_baselines3.PPO`'s arguments (all but `env` and `device`) from a phalanx task's PPO
    settings and network sizes, for `num_envs` envs. Where SB3 differs:
    - the KL-adaptive learning rate is `AdaptiveLearningRate`'s (which `learn` adds), once per
      iteration; SB3's `target_kl` (an early stop of the epochs) stays off, as phalanx has none;
    - the clipped value loss is the clipped value's alone (phalanx: the larger of both losses);
    - weights start from SB3's orthogonal initialization;
    - the actor and the critic both see the "policy" group."""
    algo, policy = train.algo, train.policy
    check_vector_observations(train, "sb3")
    return {
        "policy": "MlpPolicy",
        "learning_rate": algo.learning_rate,
        "n_steps": train.num_steps_per_env,
        "batch_size": num_envs * train.num_steps_per_env // algo.num_mini_batches,
        "n_epochs": algo.num_learning_epochs,
        "gamma": algo.gamma,
        "gae_lambda": algo.lam,
        "clip_range": algo.clip_param,
        "clip_range_vf": algo.clip_param if algo.use_clipped_value_loss else None,
        "normalize_advantage": algo.normalize_advantages,
        "ent_coef": algo.entropy_coef,
        "vf_coef": algo.value_loss_coef,
        "max_grad_norm": algo.max_grad_norm,
        "policy_kwargs": {
            "net_arch": {"pi": list(policy.actor_hidden_dims), "vf": list(policy.critic_hidden_dims)},
            "activation_fn": ACTIVATIONS[policy.activation],
            "log_std_init": math.log(policy.init_noise_std),
        },
        "seed": train.seed,
        "verbose": 0,
    }


class AdaptiveLearningRate(BaseCallback):
    """phalanx's (and rsl_rl's) KL-adaptive learning rate for SB3's PPO, once per iteration: after
    each update, the KL divergence between the policy that collected the rollout and the updated
    one, over the rollout's observations, divides the rate by 1.5 above 2 * `desired_kl` and
    multiplies it by 1.5 below `desired_kl` / 2 (within [1e-5, 1e-2]); the next update uses it.
    phalanx adapts after every minibatch; SB3's update has no hook there. Needs a Gaussian policy
    and a constant (float) `learning_rate`."""

    def __init__(self, desired_kl: float):
        super().__init__()
        self.desired_kl = desired_kl
        self._rollout: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        """Keeps the rollout's observations and the action distribution that sampled it."""
        buffer = self.model.rollout_buffer
        obs = torch.tensor(buffer.observations.reshape(-1, *buffer.obs_shape), device=self.model.device)
        with torch.no_grad():
            dist = self.model.policy.get_distribution(obs).distribution
        self._rollout = (obs, dist.mean, dist.stddev)

    def _on_rollout_start(self) -> None:
        """Adapts the rate after an update (every rollout but the first follows one)."""
        if self._rollout is None:
            return
        obs, mean, std = self._rollout
        with torch.no_grad():
            dist = self.model.policy.get_distribution(obs).distribution
            kl = float(gaussian_kl(mean, std, dist.mean, dist.stddev))
        factor = 1 / 1.5 if kl > 2.0 * self.desired_kl else 1.5 if kl < self.desired_kl / 2 else 1.0
        rate = min(max(self.model.learning_rate * factor, 1e-5), 1e-2)
        self.model.learning_rate = rate
        self.model.lr_schedule = ConstantSchedule(rate)  # what SB3's update reads


class SaveEvery(BaseCallback):
    """Saves the model (`directory`/model_N.zip after N updates) and, under VecNormalize, its
    statistics (vecnormalize_N.pkl) every `interval` iterations and at the end of training."""

    def __init__(self, directory: Path, interval: int):
        super().__init__()
        self.directory, self.interval = Path(directory), interval
        self.rollouts = 0  # collected so far; each is followed by its update

    def _on_step(self) -> bool:
        return True

    def _on_training_start(self) -> None:
        self.rollouts = 0

    def _on_rollout_end(self) -> None:
        self.rollouts += 1

    def _on_rollout_start(self) -> None:
        """The previous rollout's update is done."""
        if self.rollouts and self.rollouts % self.interval == 0:
            self._save()

    def _on_training_end(self) -> None:
        self._save()

    def _save(self) -> None:
        self.model.save(self.directory / f"model_{self.rollouts}.zip")
        normalize = self.model.get_vec_normalize_env()
        if normalize is not None:
            normalize.save(str(self.directory / f"vecnormalize_{self.rollouts}.pkl"))


def learn(train: TrainCfg, env: vec_env.VecEnv, checkpoints: Path) -> None:
    """`phalanx train --trainer sb3`: SB3's PPO, configured by `ppo_kwargs` (observations
    normalized by VecNormalize under `train.empirical_normalization`, the learning rate adapted by
    `AdaptiveLearningRate` under `algo.schedule` "adaptive"), on `env.device`, for
    `train.max_iterations` iterations; its checkpoints (model_N.zip, vecnormalize_N.pkl) go to
    `checkpoints`, its own logging is off."""
    venv: VecEnv = Sb3VecEnv(env)
    if train.empirical_normalization:
        # SB3's running statistics clip normalized observations to +-10 (clip_obs); phalanx's do not clip.
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False, gamma=train.algo.gamma)
    with warnings.catch_warnings():
        # SB3 advises the CPU for MLP policies; the policy sits with the env, which runs on env.device.
        warnings.filterwarnings("ignore", message="You are trying to run PPO on the GPU")
        model = PPO(env=venv, device=env.device, **ppo_kwargs(train, env.num_envs))
    env.watch_action_std(lambda: model.policy.log_std.exp())
    callbacks: list[BaseCallback] = [SaveEvery(checkpoints, train.save_interval)]
    if train.algo.schedule == "adaptive":
        callbacks.append(AdaptiveLearningRate(train.algo.desired_kl))
    model.learn(total_timesteps=train.max_iterations * train.num_steps_per_env * env.num_envs, callback=callbacks)
