"""The trainer needs nothing of an env beyond the `VecEnv` contract: a pure-torch env (no
physics, no task config) trains, checkpoints and resumes exactly through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from phalanx import TrainCfg, VecEnv
from phalanx.training.trainer import Trainer


class PointEnv(VecEnv):
    """A point in the plane that the action moves; reward: minus its squared distance to the
    origin, as one reward term; episodes of 20 steps (a time-out); a metric: the distance."""

    reward_names = ["distance"]  # noqa: RUF012
    metric_names = ["distance"]  # noqa: RUF012

    def __init__(self, num_envs: int, seed: int = 0):
        self.num_envs, self.device, self.action_dim = num_envs, torch.device("cpu"), 2
        self.observation_spec = {"policy": (2,)}
        self.max_episode_length, self.step_dt = 20, 0.1
        self.rng = torch.Generator().manual_seed(seed)
        self.pos = torch.zeros(num_envs, 2)
        self.length = torch.zeros(num_envs, dtype=torch.long)
        self.episode_return = torch.zeros(num_envs)
        self.reset()

    def _respawn(self, mask: torch.Tensor) -> None:
        self.pos = torch.where(mask[:, None], 2 * torch.rand(self.num_envs, 2, generator=self.rng) - 1, self.pos)
        self.length.masked_fill_(mask, 0)
        self.episode_return.masked_fill_(mask, 0.0)

    def reset(self) -> dict[str, torch.Tensor]:
        self._respawn(torch.ones(self.num_envs, dtype=torch.bool))
        self.obs = {"policy": self.pos.clone()}
        return self.obs

    def step(self, actions: torch.Tensor):
        self.pos = self.pos + 0.1 * actions.clamp(-1, 1)
        self.length += 1
        distance = self.pos.norm(dim=1)
        reward = -distance.square()
        self.episode_return += reward
        truncated = self.length >= self.max_episode_length
        terminated = torch.zeros_like(truncated)
        episode = {
            "done": truncated,
            "return": self.episode_return.clone(),
            "length": self.length.clone(),
            "terms": {"distance": self.episode_return.clone()},
            "metrics": {"distance": distance},
        }
        final_obs = {"policy": self.pos.clone()}
        self._respawn(truncated)
        self.obs = {"policy": self.pos.clone()}
        return self.obs, reward, terminated, truncated, {"final_obs": final_obs, "episode": episode, "log": {}}

    def state_dict(self) -> dict[str, Any]:
        state = {"pos": self.pos.clone(), "length": self.length.clone(), "return": self.episode_return.clone()}
        return state | {"rng": self.rng.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pos, self.length, self.episode_return = state["pos"], state["length"], state["return"]
        self.rng.set_state(state["rng"])
        self.obs = {"policy": self.pos.clone()}


def _trainer(run_dir: Path | None, iterations: int, **fields: Any) -> Trainer:
    cfg = TrainCfg(task="point", num_steps_per_env=20, max_iterations=iterations, save_interval=1000, **fields)
    cfg.algo.learning_rate = 3e-3
    cfg.policy.init_noise_std = 0.5
    return Trainer(cfg, PointEnv(64), run_dir, console=Console(quiet=True))


def test_a_plain_vec_env_trains() -> None:
    trainer = _trainer(None, 40)
    rows = [trainer.iterate() for _ in range(40)]
    assert rows[-1]["metrics/distance"] < 0.5 * rows[0]["metrics/distance"], (rows[0], rows[-1])
    assert rows[-1]["mean_reward"] > rows[0]["mean_reward"]
    assert "reward_terms/distance" in rows[-1] and rows[-1]["invalid_env_resets"] == 0


def test_a_plain_vec_env_resumes_exactly(tmp_path: Path) -> None:
    straight = _trainer(None, 4)
    for _ in range(4):
        straight.iterate()
    first = _trainer(tmp_path, 2)
    first.learn()
    state = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    resumed = _trainer(None, 4)
    resumed.load_state_dict(state)
    for _ in range(2):
        resumed.iterate()
    for a, b in zip(straight.policy.parameters(), resumed.policy.parameters(), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(straight.env.pos, resumed.env.pos)


def test_the_networks_run_in_the_chosen_matmul_precision_and_only_they() -> None:
    # TF32 (the default) covers acting, bootstrapping and the update; the env and the caller keep theirs.
    before = torch.backends.cuda.matmul.fp32_precision
    for fields, expected in (({}, "tf32"), ({"tf32": False}, "ieee")):
        trainer = _trainer(None, 1, **fields)
        seen: set[str] = set()
        for module in (trainer.policy.actor, trainer.policy.critic):
            module.register_forward_pre_hook(lambda *_, seen=seen: seen.add(torch.backends.cuda.matmul.fp32_precision))
        trainer.iterate()
        assert seen == {expected}, fields
        assert torch.backends.cuda.matmul.fp32_precision == before
