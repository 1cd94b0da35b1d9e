"""anymal-rough: robots spawn on their terrain tile, the curriculum moves them at reset, the
contact buffers hold on every sub-terrain, and the trainer logs the mean terrain level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers import make_cpu, random_actions
from phalanx.cli import main
from phalanx.core.errors import ConfigError
from phalanx.training.registry import env_cfg


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


def test_base_touching_the_terrain_ends_the_episode_without_colliding_with_it() -> None:
    """The base does not collide with the terrain; its site reaching into the terrain (level or
    on its side, on stairs or flat ground) is what ends the episode, and 2 cm above is not."""
    import mujoco
    import mujoco_warp as mjw

    from phalanx.envs.mdp.terminations import site_touches_terrain

    env = _small_rough(4)
    sim, terrain = env.sim, env.terrain.terrain
    touches = site_touches_terrain(env, site="base")
    half = sim.mjm.site_size[sim.site_ids(["base"]).item()]
    px, h = 80, 0.1  # grid points per 8 m tile
    stairs = (3 * px + 25, terrain.tile_types.index("stairs_up") * px + 30)  # hardest row, off the platform
    flat = (1 * px + 40, terrain.tile_types.index("flat") * px + 40)
    level, side = (
        torch.tensor([1.0, 0.0, 0.0, 0.0]),
        torch.tensor([0.5**0.5, 0.5**0.5, 0.0, 0.0]),
    )  # side: 90 deg about x

    def top(i: int, j: int, rx: float, ry: float) -> float:  # highest grid point under a footprint
        return float(
            terrain.heights[i - int(rx / h) : i + int(rx / h) + 1, j - int(ry / h) : j + int(ry / h) + 1].max()
        )

    poses = [  # (grid point, orientation, height of the site's center)
        (stairs, level, top(*stairs, half[0], half[1]) + half[2] - 0.005),
        (stairs, level, top(*stairs, half[0], half[1]) + half[2] + 0.02),
        (flat, side, half[1] - 0.005),
        (flat, side, half[1] + 0.02),
    ]
    for env_id, ((i, j), quat, z) in enumerate(poses):
        sim.qpos[env_id, :3] = torch.tensor([i * h, j * h, z])
        sim.qpos[env_id, 3:7] = quat
        sim.qpos[env_id, 7:] = sim.default_qpos[7:]
    sim.launch(lambda: mjw.kinematics(sim.model, sim.data))
    assert touches(env).tolist() == [True, False, True, False]

    data = mujoco.MjData(sim.mjm)
    data.qpos[:] = sim.qpos[0].numpy()
    data.qpos[2] -= 0.02  # the base geom (1 cm inside the site) 1.5 cm into the stairs
    mujoco.mj_forward(sim.mjm, data)
    base = sim.mjm.geom("base").id
    geoms = {int(g) for c in data.contact[: data.ncon] for g in (c.geom1, c.geom2)}
    assert base not in geoms, "the base collides with nothing"
