"""GPU-only checks: the captured-graph path gives the same physics as the CPU path."""

from __future__ import annotations

import pytest
import torch

import phalanx
from phalanx.envs import TASKS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("task", list(TASKS))
def test_steps_on_cuda_without_nan(task: str) -> None:
    env = phalanx.make(task, num_envs=256, device="cuda", seed=0, verbose=False)
    assert env.sim._graph is None
    for _ in range(200):
        obs, reward, terminated, truncated, extras = env.step(torch.rand(256, env.action_dim, device="cuda") * 2 - 1)
    assert env.sim._graph is not None, "CUDA stepping must go through the captured graph"
    assert obs["policy"].device.type == "cuda" and reward.device.type == "cuda"
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()


def test_cartpole_cuda_matches_cpu() -> None:
    """Same seed, same actions: the captured CUDA step and the CPU step agree on the trajectory."""
    envs = {d: phalanx.make("cartpole", num_envs=32, device=d, seed=3, verbose=False) for d in ("cpu", "cuda")}
    g = torch.Generator().manual_seed(0)
    pole = (torch.rand(32, generator=g) - 0.5) * 0.2  # small angles: no episode ends in 50 steps
    for d, env in envs.items():
        env.sim.qpos[:, 1] = pole.to(d)
        env.sim.qvel.zero_()
    for _ in range(50):
        action = (torch.rand(32, 1, generator=g) * 2 - 1) * 0.05
        out = {}
        for d, env in envs.items():
            obs, _, terminated, truncated, _ = env.step(action.to(d))
            assert not (terminated | truncated).any()
            out[d] = obs["policy"].cpu()
    torch.testing.assert_close(out["cuda"], out["cpu"], atol=2e-3, rtol=2e-3)
