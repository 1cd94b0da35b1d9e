"""Terrain generation is deterministic, and the height scan reads the generated heights back."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from phalanx.assets import asset_path
from phalanx.core.errors import ConfigError
from phalanx.envs.random_numbers import StepRandoms
from phalanx.sensors import HeightScanner
from phalanx.sim import SimCfg, Simulator
from phalanx.terrain import SUB_TERRAINS, TerrainCfg, add_terrain, generate_terrain

ALL = {name: 1.0 for name in SUB_TERRAINS}


def _cfg(**kwargs) -> TerrainCfg:
    return TerrainCfg(num_rows=3, num_cols=len(ALL), tile_size=4.0, proportions=ALL, **kwargs)


def test_generation_is_deterministic_from_the_seed() -> None:
    a, b, c = generate_terrain(_cfg(seed=3)), generate_terrain(_cfg(seed=3)), generate_terrain(_cfg(seed=4))
    assert np.array_equal(a.heights, b.heights) and np.array_equal(a.origins, b.origins)
    assert not np.array_equal(a.heights, c.heights)
    assert a.tile_types == list(ALL) and a.heights.shape == (3 * 40 + 1, len(ALL) * 40 + 1)


def test_difficulty_rises_along_the_rows() -> None:
    t = generate_terrain(_cfg())
    px = 40
    stairs = t.tile_types.index("stairs_up")
    tops = [t.heights[r * px : (r + 1) * px + 1, stairs * px : (stairs + 1) * px + 1].max() for r in range(3)]
    assert tops[0] < tops[1] < tops[2]
    assert np.all(t.heights[:, t.tile_types.index("flat") * px + 5] == 0.0)


def test_random_stones_get_smaller_sparser_and_more_uneven_with_difficulty() -> None:
    coverage, spread = [], []
    for difficulty in (0.0, 0.5, 1.0):
        h = SUB_TERRAINS["random_stones"](81, 0.1, difficulty, np.random.default_rng(0))
        center = np.abs(np.arange(81) * 0.1 - 4.05) < 1.0
        assert np.all(h[np.ix_(center, center)] == 0.0), "the spawn platform is flat"
        depth = 0.05 + 0.95 * difficulty**2
        stones = h > -depth
        assert np.all(h[~stones] == -depth), "between the stones: holes, deeper on harder levels"
        rise = 0.02 + 0.13 * difficulty
        assert np.abs(h[stones]).max() <= rise + 1e-12
        coverage.append(stones.mean())
        spread.append(np.unique(h[stones]).size)
    assert coverage[0] > 0.95 and coverage[1] < 0.7 and 0.2 < coverage[2] < coverage[1], coverage
    assert spread[0] > 10, "each stone has a height of its own"


def test_bad_proportions_name_the_field() -> None:
    with pytest.raises(ConfigError, match="terrain.proportions: unknown sub-terrains \\['lava'\\]"):
        generate_terrain(TerrainCfg(proportions={"lava": 1.0}))


def test_height_scan_reads_the_generated_heights_on_known_tiles() -> None:
    """Rays land on grid points: the scan equals base height - terrain height - offset."""
    terrain = generate_terrain(_cfg(seed=1))
    spec = mujoco.MjSpec.from_file(asset_path("anymal.xml"))
    add_terrain(spec, terrain)
    sim = Simulator(spec.compile(), 2, "cpu", SimCfg(decimation=1))
    scanner = HeightScanner(sim, size=(1.0, 0.6), resolution=0.1, max_height=5.0)
    px, h = 40, 0.1
    # env 0 over the stairs of the hardest row, env 1 over the rough tile of the middle row
    tiles = [(2, terrain.tile_types.index("stairs_up")), (1, terrain.tile_types.index("random_rough"))]
    centers = [(r * px + 13, c * px + 17) for r, c in tiles]  # grid points, away from tile borders
    for env, (i, j) in enumerate(centers):
        sim.qpos[env, :3] = torch.tensor([i * h, j * h, 3.0])
        sim.qpos[env, 3:7] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    sim.step()  # puts the static terrain's geom pose into the data; the scan reads the root from qpos
    for env, (i, j) in enumerate(centers):
        sim.qpos[env, :3] = torch.tensor([i * h, j * h, 3.0])
        sim.qpos[env, 3:7] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    scan = scanner()
    assert scan.shape == (2, 11 * 7)
    for env, (i, j) in enumerate(centers):
        offsets = np.rint(scanner.pattern.numpy() / h).astype(int)
        expected = 3.0 - terrain.heights[i + offsets[:, 0], j + offsets[:, 1]] - 0.5
        expected = np.minimum(expected, scanner.max_height)
        np.testing.assert_allclose(scan[env].numpy(), expected, atol=2e-4)
    assert scan[0].std() > 0.01, "the stairs tile is not flat"


def test_height_at_is_the_surface_mujoco_casts_rays_at() -> None:
    """`TerrainScene.height_at` splits each cell like MuJoCo's heightfield: at random points on
    every sub-terrain, off grid points, it equals where MuJoCo's C ray cast hits."""
    from phalanx.envs.terrain_scene import TerrainScene

    scene = TerrainScene(_cfg(seed=5), 1, torch.device("cpu"), StepRandoms(0, torch.device("cpu")))
    spec = mujoco.MjSpec.from_file(asset_path("anymal.xml"))
    scene.add_to(spec)
    mjm = spec.compile()
    data = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, data)
    rng = np.random.default_rng(0)
    nx, ny = scene.terrain.heights.shape
    xy = rng.uniform((0.05, 0.05), ((nx - 1) * 0.1 - 0.05, (ny - 1) * 0.1 - 0.05), (2000, 2))
    geomgroup = np.array([0, 0, 1, 0, 0, 0], dtype=np.uint8)  # the terrain's group only
    hit = np.empty(len(xy))
    for k, (x, y) in enumerate(xy):
        distance = mujoco.mj_ray(mjm, data, np.array([x, y, 10.0]), np.array([0.0, 0.0, -1.0]), geomgroup, 1, -1,
                                 np.zeros(1, dtype=np.int32))  # fmt: skip
        hit[k] = 10.0 - distance
    expected = torch.tensor(hit, dtype=torch.float32)
    torch.testing.assert_close(scene.height_at(torch.tensor(xy, dtype=torch.float32)), expected, atol=2e-4, rtol=0)
    # A diverged env's NaN or infinite position reads an edge's height instead of indexing out of
    # the grid (on CUDA, a device-side assert that ends the process).
    wild = torch.tensor([[float("nan"), 1.0], [1.0, float("nan")], [float("inf"), -float("inf")]])
    assert scene.height_at(wild).isfinite().all()


def test_height_scan_equals_mujoco_warps_plain_ray_cast_anywhere() -> None:
    """The scan's BVH path hits what the plain path (every ray against every geom) hits, for
    turned robots anywhere on and off a terrain of many heightfield blocks."""
    import mujoco_warp as mjw
    import warp as wp

    terrain = generate_terrain(_cfg(seed=2))  # 12 m x 32 m: 2 x 4 blocks
    spec = mujoco.MjSpec.from_file(asset_path("anymal.xml"))
    add_terrain(spec, terrain)
    n = 64
    sim = Simulator(spec.compile(), n, "cpu", SimCfg(decimation=1))
    scanner = HeightScanner(sim, max_height=5.0)
    rng = np.random.default_rng(0)
    yaw = rng.uniform(-np.pi, np.pi, n)
    qpos = np.concatenate(
        [rng.uniform(-1.0, [13.0, 33.0], (n, 2)), np.full((n, 1), 3.0), np.cos(yaw / 2)[:, None], np.zeros((n, 2)),
         np.sin(yaw / 2)[:, None]], 1,
    )  # fmt: skip
    sim.qpos[:, :7] = torch.tensor(qpos, dtype=torch.float32)
    sim.step()
    sim.qpos[:, :7] = torch.tensor(qpos, dtype=torch.float32)
    scan = scanner().clone()
    plain = wp.zeros_like(scanner._dist)
    mjw.rays(sim.model, sim.data, scanner._pnt, scanner._vec, scanner._groups, True, scanner._exclude, plain,
             wp.zeros_like(scanner._geomid), wp.zeros_like(scanner._normal))  # fmt: skip
    plain = wp.to_torch(plain)
    assert 0.0 < (plain < 0).float().mean() < 0.5, "some rays miss the terrain, most hit it"
    torch.testing.assert_close(scanner.distance, plain, atol=1e-4, rtol=0.0)
    assert scan.std() > 0.01


def test_height_scan_from_the_terrain_grid_equals_the_ray_cast() -> None:
    """A scan read from the generated terrain's grid equals the one cast as rays, for turned
    robots anywhere over a terrain of many heightfield blocks, on every sub-terrain."""
    from phalanx.envs.terrain_scene import TerrainScene

    scene = TerrainScene(_cfg(seed=2), 1, torch.device("cpu"), StepRandoms(0, torch.device("cpu")))
    spec = mujoco.MjSpec.from_file(asset_path("anymal.xml"))
    scene.add_to(spec)
    n = 64
    sim = Simulator(spec.compile(), n, "cpu", SimCfg(decimation=1))
    rays, grid = HeightScanner(sim, max_height=5.0), HeightScanner(sim, max_height=5.0, surface=scene.height_at)
    assert not hasattr(grid, "distance"), "the grid scan casts no rays"
    rng = np.random.default_rng(1)
    yaw = rng.uniform(-np.pi, np.pi, n)
    qpos = np.concatenate(
        [rng.uniform(1.0, [11.0, 31.0], (n, 2)), rng.uniform(0.0, 2.0, (n, 1)), np.cos(yaw / 2)[:, None],
         np.zeros((n, 2)), np.sin(yaw / 2)[:, None]], 1,
    )  # fmt: skip
    sim.qpos[:, :7] = torch.tensor(qpos, dtype=torch.float32)
    sim.step()
    sim.qpos[:, :7] = torch.tensor(qpos, dtype=torch.float32)
    expected = rays()
    assert (rays.distance >= 0).all(), "every ray over the grid hits it"
    torch.testing.assert_close(grid(), expected, atol=2e-4, rtol=0.0)
    assert expected.std() > 0.05 and (expected.abs() < 5.0).float().mean() > 0.9


def test_height_scan_refuses_moving_geoms() -> None:
    sim = Simulator(mujoco.MjModel.from_xml_path(str(asset_path("anymal.xml"))), 1, "cpu", SimCfg())
    with pytest.raises(ValueError, match="groups \\[0\\] hold geoms that move"):
        HeightScanner(sim, groups=(0,))


def test_curriculum_promotes_demotes_and_recycles_on_scripted_distances() -> None:
    from phalanx.terrain import TerrainCurriculum

    terrain = generate_terrain(_cfg())  # 3 levels, tiles of 4 m
    cur = TerrainCurriculum(terrain, 8, "cpu", StepRandoms(0, torch.device("cpu")).randint, max_init_level=0)
    assert cur.levels.tolist() == [0] * 8 and cur.types.tolist() == list(range(8))
    torch.testing.assert_close(cur.env_origins(), torch.tensor(terrain.origins[0, :8], dtype=torch.float32))
    all_envs = torch.ones(8, dtype=torch.bool)
    far, short, between = torch.full((8,), 2.5), torch.full((8,), 0.2), torch.full((8,), 1.0)
    required = torch.full((8,), 0.5)
    cur.update(all_envs, far, required)  # more than half a tile: up
    assert cur.levels.tolist() == [1] * 8
    cur.update(all_envs, between, required)  # enough, not far: stay
    assert cur.levels.tolist() == [1] * 8
    mask = torch.tensor([True, False] * 4)
    cur.update(mask, short, required)  # too short: down, only the masked envs
    assert cur.levels.tolist() == [0, 1] * 4
    cur.update(all_envs, short, required)  # never below level 0
    assert cur.levels.tolist() == [0] * 8
    for _ in range(3):  # past the hardest level: a random level
        cur.update(all_envs, far, required)
    assert cur.levels.min() >= 0 and cur.levels.max() < 3
    assert cur.mean_level().item() == pytest.approx(cur.levels.float().mean().item())


def test_contacts_stay_under_the_geom_on_a_large_terrain() -> None:
    """A 3 cm sphere pressed 0-6 cm into flat ground anywhere on a 40 m x 40 m terrain touches it
    at most as deep as it is pressed, right under it (one 40 m heightfield gave contacts metres
    deep and away in 1 of 50 poses; see phalanx.terrain.model)."""
    import mujoco_warp as mjw

    terrain = generate_terrain(TerrainCfg(num_rows=5, num_cols=5, tile_size=8.0, proportions={"flat": 1.0}))
    spec = mujoco.MjSpec.from_string(
        '<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>'
        '<body><freejoint/><geom type="sphere" size="0.03"/></body></worldbody></mujoco>'
    )
    add_terrain(spec, terrain)
    n = 2000
    sim = Simulator(spec.compile(), n, "cpu", SimCfg(nconmax_per_env=8, njmax_per_env=32))
    rng = np.random.default_rng(0)
    pressed = rng.uniform(0.0, 0.06, n)
    quat = rng.standard_normal((n, 4))
    qpos = np.concatenate(
        [rng.uniform(0.5, 39.5, (n, 2)), (0.03 - pressed)[:, None], quat / np.linalg.norm(quat, axis=1, keepdims=True)],
        1,
    )
    sim.qpos.copy_(torch.tensor(qpos, dtype=torch.float32))
    mjw.forward(sim.model, sim.data)
    count = int(sim.data.nacon.numpy()[0])
    world = sim.data.contact.worldid.numpy()[:count]
    dist = sim.data.contact.dist.numpy()[:count]
    offset = np.linalg.norm(sim.data.contact.pos.numpy()[:count, :2] - qpos[world, :2], axis=1)
    assert count >= n // 2, "most pressed spheres touch"
    assert np.all(dist >= -pressed[world] - 1e-3), f"contacts deeper than pressed: {np.sort(dist)[:5]}"
    assert np.all(offset <= 0.03 + 1e-3), f"contacts away from the sphere: {np.sort(offset)[-5:]}"


def test_an_unknown_excluded_body_names_the_field() -> None:
    spec = mujoco.MjSpec.from_file(asset_path("anymal.xml"))
    with pytest.raises(ConfigError, match="env.terrain.exclude_bodies: no body named 'torso'"):
        add_terrain(spec, generate_terrain(_cfg(exclude_bodies=("torso",))))
