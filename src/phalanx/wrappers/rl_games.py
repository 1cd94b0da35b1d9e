"""rl_games (rl-games 1.6.x): a phalanx env as an rl_games `IVecEnv`, and the parameters of rl_games'
continuous PPO (`a2c_continuous`) from a phalanx task's training defaults:

    from rl_games.torch_runner import Runner

    env = RlGamesVecEnv(phalanx.make("ant", num_envs=4096, device="cuda"))
    register(env)  # the rl_games env named "phalanx"
    runner = Runner()
    runner.load(runner_config(phalanx.train_cfg("ant"), env, Path("runs/ant-rl_games")))
    runner.run({"train": True})  # checkpoints in runs/ant-rl_games/nn, TensorBoard in .../summaries
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from rl_games.common import env_configurations, vecenv
    from rl_games.common.algo_observer import DefaultAlgoObserver
    from rl_games.common.ivecenv import IVecEnv
    from rl_games.torch_runner import Runner
except ImportError:
    raise ImportError("phalanx.wrappers.rl_games needs rl-games: pip install -e '.[rl-games]'") from None
import torch

from phalanx.core.errors import ConfigError
from phalanx.core.vec_env import VecEnv
from phalanx.wrappers.spaces import action_box, check_vector_observations, observation_box

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg

ENV_NAME = "phalanx"
"""The name under which `register` makes the env known to rl_games (`config.env_name`)."""

ACTIVATIONS = {"elu": "elu", "relu": "relu", "tanh": "tanh", "selu": "selu", "silu": "swish"}
"""phalanx's activation names -> rl_games'."""


class RlGamesVecEnv(IVecEnv):
    """`env` (a phalanx `VecEnv`) behind rl_games' IVecEnv contract. Observations go as {"obs": the
    "policy" group, "states": the "critic" group, where the task has one (rl_games' central value
    network then reads it)}. Dones are terminated or truncated; time-outs go as `infos["time_outs"]`,
    which rl_games bootstraps (`value_bootstrap`: gamma times the value of the step's state added to
    the reward, as rsl_rl does). Spaces are gymnasium's (rl_games checks them by class name). All are
    copies the next step leaves alone: rl_games keeps the observations and dones it acted on until
    after the step that follows."""

    def __init__(self, env: VecEnv):
        self.env, self.num_envs, self.device = env, env.num_envs, env.device
        self.has_states = "critic" in env.obs
        self.observation_space = observation_box(env.obs["policy"])
        self.state_space = observation_box(env.obs["critic"]) if self.has_states else None
        self.action_space = action_box(env)

    def get_env_info(self) -> dict[str, Any]:
        info = {"observation_space": self.observation_space, "action_space": self.action_space}
        return info | ({"state_space": self.state_space} if self.has_states else {})

    def reset(self) -> dict[str, torch.Tensor]:
        return self._observations(self.env.reset())

    def step(self, actions: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, dict]:
        """Returns the observations ("obs", "states": (num_envs, dim)), the reward (num_envs,),
        the dones (num_envs,) bool and the infos: "time_outs" (num_envs,) bool."""
        obs, reward, _, truncated, extras = self.env.step(actions)
        done = extras["episode"]["done"]
        return self._observations(obs), reward.clone(), done.clone(), {"time_outs": truncated.clone()}

    def _observations(self, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        groups = {"obs": obs["policy"].clone()}
        return groups | ({"states": obs["critic"].clone()} if self.has_states else {})


def register(env: RlGamesVecEnv) -> None:
    """Makes `env` rl_games' env `ENV_NAME`: its trainer (`vecenv.create_vec_env`) and its players
    (`env_configurations`) then take this one, whatever `num_actors` they ask for."""
    vecenv.register(ENV_NAME, lambda config_name, num_actors, **kwargs: env)
    env_configurations.register(ENV_NAME, {"vecenv_type": ENV_NAME, "env_creator": lambda **kwargs: env})


def runner_config(train: TrainCfg, env: RlGamesVecEnv, experiment_dir: Path) -> dict[str, Any]:
    """The config `rl_games.torch_runner.Runner.load` takes, with a phalanx task's PPO settings and
    network sizes, for `env` (registered with `register`); checkpoints go to `experiment_dir`/nn.
    Where rl_games differs:
    - both MLPs get `policy.actor_hidden_dims`; `critic_hidden_dims` sizes only the central value
      network (tasks with a "critic" group), which has its own optimizer at a constant rate;
    - advantages are normalized over the whole rollout, not per minibatch;
    - the adaptive learning rate is rsl_rl's rule, within [1e-6, 1e-2] (phalanx: [1e-5, 1e-2]).
    Settings phalanx has no counterpart for keep phalanx's behaviour (commented where they are set).
    """
    policy, algo = train.policy, train.algo
    check_vector_observations(train, "rl_games")
    if policy.activation not in ACTIVATIONS:
        raise ConfigError(f"got {policy.activation!r}; rl_games takes {', '.join(ACTIVATIONS)}", "policy.activation")
    activation = ACTIVATIONS[policy.activation]
    minibatch_size = env.num_envs * train.num_steps_per_env // algo.num_mini_batches
    sigma = {"name": "const_initializer", "val": math.log(policy.init_noise_std)}  # the log std
    gaussian = {"mu_activation": "None", "sigma_activation": "None", "fixed_sigma": True}
    network = {
        "name": "actor_critic",
        "separate": not env.has_states,  # with states the central value network is the critic
        "space": {"continuous": gaussian | {"mu_init": {"name": "default"}, "sigma_init": sigma}},
        # "default": weights initialized as PyTorch does
        "mlp": {"units": list(policy.actor_hidden_dims), "activation": activation, "initializer": {"name": "default"}},
    }
    config = {
        "name": train.task or ENV_NAME,
        "env_name": ENV_NAME,
        "device": str(env.device),
        "device_name": str(env.device),
        "train_dir": str(experiment_dir.parent),
        "full_experiment_name": experiment_dir.name,
        "num_actors": env.num_envs,
        "horizon_length": train.num_steps_per_env,
        "minibatch_size": minibatch_size,
        "mini_epochs": algo.num_learning_epochs,
        "max_epochs": train.max_iterations,
        "save_frequency": train.save_interval,
        "learning_rate": algo.learning_rate,
        "lr_schedule": "adaptive" if algo.schedule == "adaptive" else None,  # None: constant
        "kl_threshold": algo.desired_kl,
        "schedule_type": "legacy",
        "e_clip": algo.clip_param,
        "clip_value": algo.use_clipped_value_loss,
        "gamma": algo.gamma,
        "tau": algo.lam,
        "critic_coef": 2.0 * algo.value_loss_coef,  # rl_games weighs its value loss 0.5 * critic_coef
        "entropy_coef": algo.entropy_coef,
        "grad_norm": algo.max_grad_norm,
        "truncate_grads": True,
        "normalize_advantage": algo.normalize_advantages,
        "normalize_input": train.empirical_normalization,
        "normalize_value": False,
        "value_bootstrap": True,
        "bounds_loss_coef": 0.0,
        "clip_actions": False,  # the env clips them to `actions.clip`
        "reward_shaper": {},
        "ppo": True,
        "print_stats": False,  # phalanx prints one line per iteration
        "torch_compile": False,  # seconds of start-up that cartpole-sized networks do not win back
        "multi_gpu": train.distributed,  # under torchrun (--gpus): one rank per GPU
    }
    if env.has_states:
        critic_mlp = network["mlp"] | {"units": list(policy.critic_hidden_dims)}
        critic = {"name": "actor_critic", "central_value": True, "mlp": critic_mlp}
        config["use_experimental_cv"] = False  # no value loss on the actor's unused value head
        config["central_value_config"] = {
            "network": critic,
            # constant: rl_games adapts the actor's rate alone; no weight on its loss (Adam hardly minds the scale)
            "learning_rate": algo.learning_rate,
            "minibatch_size": minibatch_size,
            "mini_epochs": algo.num_learning_epochs,
            "e_clip": algo.clip_param,
            "clip_value": algo.use_clipped_value_loss,
            "grad_norm": algo.max_grad_norm,
            "truncate_grads": True,
            "normalize_input": train.empirical_normalization,
        }
    params = {
        "seed": train.seed,
        "torch_threads": 0,  # torch's thread count left alone
        "algo": {"name": "a2c_continuous"},
        "model": {"name": "continuous_a2c_logstd"},
        "network": network,
        "config": config,
    }
    return {"params": params}


class _NoEvents:
    """A TensorBoard writer that writes nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class _Observer(DefaultAlgoObserver):
    """rl_games' default observer, with rl_games' own TensorBoard events left out (phalanx's meter
    logs every iteration, as for every library) and the agent's action std handed to `env`'s meter."""

    def __init__(self, env: VecEnv):
        super().__init__()
        self.env = env

    def after_init(self, algo: Any) -> None:
        if algo.writer is not None:  # rank 0's, made with the agent: its event file is already open
            algo.writer.close()
            shutil.rmtree(algo.summaries_dir, ignore_errors=True)
            algo.writer = _NoEvents()
        if getattr(algo, "central_value_net", None) is not None:
            algo.central_value_net.writter = algo.writer  # rl_games' spelling
        super().after_init(algo)
        network = algo.model.a2c_network  # its sigma is the log std ("continuous_a2c_logstd")
        self.env.watch_action_std(lambda: network.sigma.exp())


def learn(train: TrainCfg, env: VecEnv, checkpoints: Path) -> None:
    """`phalanx train --trainer rl_games`: rl_games' Runner, configured by `runner_config`, for
    `train.max_iterations` epochs (each one rollout, then the update; rl_games steps the env
    nowhere else); its checkpoints (.pth, every `train.save_interval` epochs and at the end) go
    to `checkpoints`/nn; it writes no TensorBoard events of its own. rl_games' Runner
    turns TF32 matrix products on for the whole process (as phalanx's `--tf32` default does)."""
    vec_env = RlGamesVecEnv(env)
    register(vec_env)
    runner = Runner(algo_observer=_Observer(env))
    runner.load(runner_config(train, vec_env, checkpoints))
    runner.run({"train": True})
