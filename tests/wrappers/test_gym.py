"""The Gymnasium vector env: ids for every task, spaces that hold what it returns, seeding,
same-step autoreset with the final observations, and Gymnasium's own checks adapted to a batch."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

import phalanx
import phalanx.gym
from phalanx.gym import PhalanxVectorEnv, gym_id


def _numpy(value):
    return {key: _numpy(item) for key, item in value.items()} if isinstance(value, dict) else value.cpu().numpy()


def test_every_task_has_an_id() -> None:
    assert gym_id("cartpole") == "Phalanx-Cartpole-v0" and gym_id("cartpole-rgb") == "Phalanx-Cartpole-RGB-v0"
    assert gym_id("anymal-flat") == "Phalanx-Anymal-Flat-v0"
    assert all(gym_id(task) in gymnasium.registry for task in phalanx.registered_tasks())


def test_make_vec_builds_the_task_with_its_arguments() -> None:
    envs = gymnasium.make_vec("Phalanx-Cartpole-v0", num_envs=3, device="cpu", seed=2)
    assert isinstance(envs.unwrapped, PhalanxVectorEnv) and envs.num_envs == 3
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert envs.single_action_space == gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32), "cartpole: no clip"
    ant = PhalanxVectorEnv("ant", num_envs=2, device="cpu")
    clip = phalanx.env_cfg("ant").actions.clip
    assert ant.single_action_space == gymnasium.spaces.Box(-clip, clip, (8,), np.float32)
    assert envs.observation_space.shape is None and envs.observation_space["policy"].shape == (3, 4)


@pytest.mark.parametrize("task", ["cartpole", "cartpole-rgb"])
def test_spaces_hold_what_reset_and_step_return(task: str) -> None:
    """Gymnasium's env checker, batched: reset and step outputs lie in the spaces, with the
    right types and shapes, for sampled actions (NumPy) and tensors alike."""
    envs = PhalanxVectorEnv(task, num_envs=4, device="cpu")
    obs, infos = envs.reset(seed=0)
    assert envs.observation_space.contains(_numpy(obs)) and infos == {}
    envs.action_space.seed(0)
    for actions in (envs.action_space.sample(), torch.zeros(4, envs.env.action_dim)):
        obs, reward, terminated, truncated, infos = envs.step(actions)
        assert envs.observation_space.contains(_numpy(obs))
        assert reward.shape == terminated.shape == truncated.shape == (4,)
        assert reward.dtype == torch.float32 and terminated.dtype == truncated.dtype == torch.bool
        assert set(infos["final_obs"]) == set(obs) and infos["_final_obs"].dtype == torch.bool
    if task == "cartpole-rgb":
        assert obs["image"].dtype == torch.uint8 and envs.single_observation_space["image"].dtype == np.uint8


def test_reset_with_a_seed_repeats_the_rollout() -> None:
    envs = PhalanxVectorEnv("cartpole", num_envs=4, device="cpu", seed=0)
    actions = torch.linspace(-1, 1, 4)[:, None]

    def rollout(seed: int) -> list[torch.Tensor]:
        obs, _ = envs.reset(seed=seed)
        return [obs["policy"]] + [envs.step(actions)[0]["policy"] for _ in range(5)]

    first, again, other = rollout(7), rollout(7), rollout(8)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])
    assert not torch.equal(first[1], first[2]), "outputs are copies: the next step leaves them alone"


def test_done_envs_reset_in_the_same_step_with_their_final_observations() -> None:
    cfg = phalanx.env_cfg("cartpole")
    cfg.episode_length_s = 0.1  # a few steps
    envs = PhalanxVectorEnv(cfg, num_envs=2, device="cpu")
    envs.reset(seed=0)
    for _ in range(envs.env.max_episode_length):
        obs, reward, terminated, truncated, infos = envs.step(np.zeros((2, 1), np.float32))
    done = infos["_final_obs"]
    assert done.all() and truncated.all() and torch.equal(infos["_episode"], done)
    assert torch.equal(infos["episode"]["l"], torch.full((2,), envs.env.max_episode_length))
    assert not torch.equal(infos["final_obs"]["policy"], obs["policy"]), "obs are the new episodes'"
    assert set(infos["episode"]["terms"]) == set(cfg.rewards)


def test_reset_refuses_options() -> None:
    envs = PhalanxVectorEnv("cartpole", num_envs=2, device="cpu")
    with pytest.raises(ValueError, match="reset: options are not supported, got \\['mask'\\]"):
        envs.reset(options={"mask": None})
