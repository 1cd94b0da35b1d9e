"""rsl_rl (rsl-rl-lib 5.x): a phalanx env as `rsl_rl.env.VecEnv`, and a runner config from a
phalanx task's training defaults:

    from rsl_rl.runners import OnPolicyRunner

    env = RslRlVecEnv(phalanx.make("ant", num_envs=4096, device="cuda"))
    runner = OnPolicyRunner(env, runner_cfg(phalanx.train_cfg("ant")), log_dir="runs/ant-rsl", device="cuda")
    runner.learn(num_learning_iterations=300)
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from rsl_rl.env import VecEnv
    from rsl_rl.runners import OnPolicyRunner
    from rsl_rl.utils import LogWriter
    from tensordict import TensorDict
except ImportError:
    raise ImportError("phalanx.wrappers.rsl_rl needs rsl-rl-lib: pip install -e '.[rsl-rl]'") from None
import torch

from phalanx.core import vec_env

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg


class RslRlVecEnv(VecEnv):
    """`env` (a phalanx `VecEnv`) behind rsl_rl's VecEnv contract. Observations are a TensorDict of
    the task's groups ("policy", and "critic" where the task has a privileged one: `runner_cfg` maps
    them to the actor and critic). Time-outs go to rsl_rl as `extras["time_outs"]` (it bootstraps
    them from the value of the step's state); the episodes that end add their reward terms and
    metrics to `extras["log"]`, which rsl_rl logs."""

    def __init__(self, env: vec_env.VecEnv):
        self.env, self.cfg = env, env.cfg
        self.num_envs, self.num_actions, self.device = env.num_envs, env.action_dim, env.device
        self.max_episode_length = env.max_episode_length

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """(num_envs,) env steps into each episode; writing it (rsl_rl's random initial episode
        lengths) moves each env's time limit closer."""
        return self.env.episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        self.env.episode_length.copy_(value)

    def get_observations(self) -> TensorDict:
        return self._tensordict(self.env.obs)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        episode = extras["episode"]
        done = episode["done"]
        count = done.sum().clamp(min=1)
        ended = {f"Episode_Reward/{name}": (value * done).sum() / count for name, value in episode["terms"].items()}
        ended |= {f"Episode_Metric/{name}": (value * done).sum() / count for name, value in episode["metrics"].items()}
        log = ended | {f"Env/{name}": value for name, value in extras["log"].items()}
        return self._tensordict(obs), reward.clone(), done.clone(), {"time_outs": truncated.clone(), "log": log}

    def _tensordict(self, obs: dict[str, torch.Tensor]) -> TensorDict:
        """A copy: rsl_rl keeps the observations it acted on until the step after, which on CUDA
        overwrites the env's captured outputs."""
        groups = {group: value.clone() for group, value in obs.items()}
        return TensorDict(groups, batch_size=[self.num_envs], device=self.device)


def runner_cfg(train: TrainCfg) -> dict[str, Any]:
    """rsl_rl's OnPolicyRunner config with a phalanx task's PPO settings and network sizes (vector
    observations: an MLP actor on "policy", an MLP critic on "critic" where the task has one)."""
    algo, policy = train.algo, train.policy
    critic_group = "critic" if "critic" in train.env.observations else "policy"
    normalize = train.empirical_normalization
    gaussian = {"class_name": "GaussianDistribution", "init_std": policy.init_noise_std}

    def model(hidden: tuple[int, ...], distribution: dict | None) -> dict[str, Any]:
        cfg = {"class_name": "MLPModel", "hidden_dims": list(hidden), "activation": policy.activation}
        return cfg | {"obs_normalization": normalize, "distribution_cfg": distribution}

    return {
        "num_steps_per_env": train.num_steps_per_env,
        "save_interval": train.save_interval,
        # phalanx resets an env whose physics broke before its observations leave the step; the
        # check would read the device at every step.
        "check_for_nan": False,
        "obs_groups": {"actor": ["policy"], "critic": [critic_group]},
        "actor": model(policy.actor_hidden_dims, gaussian),
        "critic": model(policy.critic_hidden_dims, None),
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": algo.num_learning_epochs,
            "num_mini_batches": algo.num_mini_batches,
            "clip_param": algo.clip_param,
            "gamma": algo.gamma,
            "lam": algo.lam,
            "value_loss_coef": algo.value_loss_coef,
            "entropy_coef": algo.entropy_coef,
            "learning_rate": algo.learning_rate,
            "max_grad_norm": algo.max_grad_norm,
            "use_clipped_value_loss": algo.use_clipped_value_loss,
            "schedule": algo.schedule,
            "desired_kl": algo.desired_kl,
        },
    }


def learn(train: TrainCfg, env: vec_env.VecEnv, checkpoints: Path) -> None:
    """`phalanx train --trainer rsl_rl`: rsl_rl's OnPolicyRunner, configured by `runner_cfg`, for
    `train.max_iterations` iterations; its checkpoints (model_N.pt) go to `checkpoints`. phalanx
    logs each iteration (metrics.jsonl, the dashboard, the console), so rsl_rl's own log stays
    off: no TensorBoard events of its own, no console block."""
    cfg = runner_cfg(train) | {"logger": {"class_name": _CheckpointsOnly}}
    runner = OnPolicyRunner(RslRlVecEnv(env), cfg, log_dir=str(checkpoints), device=str(env.device))
    for name in ("init_logging_writer", "log"):  # its console block
        setattr(runner.logger, name, _quiet(getattr(runner.logger, name)))
    runner.logger.git_status_repos.clear()  # no diff of whatever git repository holds rsl_rl's install
    env.watch_action_std(lambda: runner.alg.actor.output_std)  # of the last batch the actor saw
    runner.learn(num_learning_iterations=train.max_iterations)
    with contextlib.suppress(OSError):
        (checkpoints / "git").rmdir()  # made for the git state of the repositories it was given: none


def _quiet(method: Any) -> Any:
    """`method` with what it prints left out."""

    def quiet(*args: Any, **kwargs: Any) -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return method(*args, **kwargs)

    return quiet


class _CheckpointsOnly(LogWriter):
    """rsl_rl's log writer, writing nothing: rsl_rl saves checkpoints only where it has a writer."""

    def __init__(self, log_dir: str, **settings: Any) -> None:
        pass

    def add_scalar(self, tag: str, scalar_value: float, global_step: int) -> None:
        pass
