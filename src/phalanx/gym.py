"""Gymnasium's vector-env API over a phalanx env (`PhalanxVectorEnv`), and a `gymnasium.make_vec` id
for every registered task (`Phalanx-Cartpole-v0`, `Phalanx-Cartpole-RGB-v0`, `Phalanx-Anymal-Flat-v0`, ...):

    import gymnasium
    import phalanx.gym  # registers the ids

    envs = gymnasium.make_vec("Phalanx-Ant-v0", num_envs=4096, device="cuda")
    obs, infos = envs.reset(seed=0)
    obs, reward, terminated, truncated, infos = envs.step(envs.action_space.sample())
"""

from __future__ import annotations

import functools
from typing import Any

try:
    import gymnasium
except ImportError:
    raise ImportError("phalanx.gym needs gymnasium: pip install -e '.[gym]'") from None
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import phalanx
from phalanx.envs.cfg import TaskCfg
from phalanx.envs.task_env import TaskEnv
from phalanx.wrappers.spaces import action_box, observation_box

ID_WORDS = {"rgb": "RGB"}
"""Words of task names spelled otherwise than capitalized in Gymnasium ids."""


def gym_id(task: str) -> str:
    """The Gymnasium id of a phalanx task: "anymal-flat" -> "Phalanx-Anymal-Flat-v0"."""
    return "-".join(["Phalanx", *(ID_WORDS.get(word, word.capitalize()) for word in task.split("-")), "v0"])


class PhalanxVectorEnv(VectorEnv):
    """A phalanx env (`phalanx.make(task, num_envs, device, seed)`, or one already made) as a
    `gymnasium.vector.VectorEnv`. Observations (a dict of the task's groups), rewards and flags are
    torch tensors on the env's device, as Isaac Lab's envs return them, each a copy the next step
    leaves alone; actions may be a tensor there or a NumPy array. Done envs reset inside the step
    (autoreset mode SAME_STEP): `infos["final_obs"]` holds every env's observations before the reset,
    `infos["_final_obs"]` marks the envs that were done, and `infos["episode"]` ("r" return, "l"
    length, "terms", "metrics"; `infos["_episode"]` the same mask) describes the episodes that ended."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        task: str | TaskCfg | TaskEnv,
        num_envs: int | None = None,
        device: str | torch.device | None = None,
        seed: int = 0,
    ):
        env = task if isinstance(task, TaskEnv) else phalanx.make(task, num_envs=num_envs, device=device, seed=seed)
        self.env, self.num_envs, self.device = env, env.num_envs, env.device
        self.single_observation_space = spaces.Dict({group: observation_box(value) for group, value in env.obs.items()})
        self.single_action_space = action_box(env)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Resets every env; `seed` first reseeds the env's random numbers (initial states, events)."""
        super().reset(seed=seed)  # seeds the spaces' samplers
        if options:
            raise ValueError(f"reset: options are not supported, got {sorted(options)}")
        if seed is not None:
            self.env.manual_seed(seed)
        return _copied(self.env.reset()), {}

    def step(self, actions: torch.Tensor | np.ndarray):
        actions = torch.as_tensor(actions, dtype=torch.float32, device=self.device)
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        episode = extras["episode"]
        done = episode["done"].clone()
        ended = {"r": episode["return"], "l": episode["length"]} | {k: episode[k] for k in ("terms", "metrics")}
        infos = {
            "final_obs": _copied(extras["final_obs"]),
            "_final_obs": done,
            "episode": _copied(ended),
            "_episode": done,
            "log": _copied(extras["log"]),
        }
        return _copied(obs), reward.clone(), terminated.clone(), truncated.clone(), infos


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    return value.clone()


def register_tasks() -> None:
    """Registers `gym_id(task)` for every task phalanx knows (its own and those of plugins)."""
    for task in phalanx.registered_tasks():
        name = gym_id(task)
        if name not in gymnasium.registry:
            gymnasium.register(name, vector_entry_point=functools.partial(PhalanxVectorEnv, task))


register_tasks()
