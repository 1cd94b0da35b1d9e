"""anymal-rough: robots spawn on their terrain tile, the curriculum moves them at reset, the
contact buffers hold on every sub-terrain, and the trainer logs the mean terrain level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers import make_cpu, random_actions
from phalanx.cli import main
from phalanx.errors import ConfigError
from phalanx.registry import env_cfg


def _small_rough(num_envs: int, seed: int = 0):
    cfg = env_cfg("anymal-rough")
    cfg.terrain.num_rows, cfg.terrain.num_cols = 4, 7  # one column per sub-terrain type
    return make_cpu(cfg, num_envs=num_envs, seed=seed)


def test_robots_spawn_on_their_tile() -> None:
    env = _small_rough(14)
    scene = env.terrain
    torch.testing.assert_close(scene.origins, scene.curriculum.env_origins())
    root = env.sim.qpos[:, :3]
    offset = root[:, :2] - scene.origins[:, :2]
    assert torch.all(offset.abs() <= 0.5 + 1e-5), "the reset event's xy offset around the tile center"
    torch.testing.assert_close(root[:, 2], env.sim.default_qpos[2] + scene.origins[:, 2])
    assert len(set(scene.curriculum.types.tolist())) == 7, "envs spread over every column"


def test_curriculum_moves_envs_at_their_reset() -> None:
    env = _small_rough(6, seed=3)
    env.step(torch.zeros(6, env.action_dim))  # an episode has begun: resets now count the distance
    scene, cur = env.terrain, env.terrain.curriculum
    cur.levels.copy_(torch.tensor([1, 1, 1, 2, 2, 2]))
    scene.origins.copy_(cur.env_origins())
    command = env.command("base_velocity")
    command[:, :2] = torch.tensor([1.0, 0.0])  # asks for 20 m per episode: 10 m required
    env.sim.qpos[:, :2] = scene.origins[:, :2]
    env.sim.qpos[0, 0] += 5.0  # beyond half a tile (4 m): harder
    env.sim.qpos[1, 0] += 3.0  # short of 10 m and of half a tile: easier
    mask = torch.tensor([True, True, False, False, False, False])
    env.reset(mask)
    assert cur.levels.tolist() == [2, 0, 1, 2, 2, 2]
    torch.testing.assert_close(scene.origins[:2], cur.env_origins()[:2])
    offset = env.sim.qpos[:2, :2] - scene.origins[:2, :2]
    assert torch.all(offset.abs() <= 0.5 + 1e-5), "the reset envs start on their new tile"


def test_contact_buffers_hold_and_contacts_stay_sane_on_every_sub_terrain() -> None:
    env = _small_rough(14, seed=1)
    g = torch.Generator().manual_seed(0)
    for _ in range(150):
        obs, reward, *_ = env.step(random_actions(env, g))
        assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()
        speed = env.sim.qvel[:, :3].norm(dim=1).max()
        assert speed < 20.0, f"a flailing robot moves at {speed:.3g} m/s: a bad terrain contact"
    assert int(env.invalid_resets) == 0, env.report_invalid()


def test_trainer_logs_the_mean_terrain_level(tmp_path: Path) -> None:
    flags = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "2"]
    assert main(["train", "anymal-rough", *flags, "--run-dir", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(0.0 <= row["env/terrain_level"] <= 9.0 for row in rows)


def test_resume_restores_each_envs_level_and_tile() -> None:
    env = _small_rough(6, seed=3)
    env.step(torch.zeros(6, env.action_dim))
    env.terrain.curriculum.levels.copy_(torch.tensor([3, 0, 2, 1, 3, 0]))
    env.terrain.origins.copy_(env.terrain.curriculum.env_origins())
    state = env.state_dict()
    fresh = _small_rough(6, seed=4)
    assert not torch.equal(fresh.terrain.curriculum.levels, env.terrain.curriculum.levels)
    fresh.load_state_dict(state)
    assert fresh.terrain.curriculum.levels.tolist() == [3, 0, 2, 1, 3, 0]
    torch.testing.assert_close(fresh.terrain.origins, env.terrain.origins)
    del state["terrain"]
    with pytest.raises(ConfigError, match="lacks \\['terrain'\\]"):
        fresh.load_state_dict(state)
