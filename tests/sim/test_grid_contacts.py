"""Grid contacts (phalanx.sim.grid_contacts) against MuJoCo C's heightfield collision: the same
deepest contact and contact parameters for spheres and capsules touching the terrain, four spread
contacts for a geom touching more prisms than the kernel holds, the same trajectory as MuJoCo
Warp's own collision for a standing robot, and clear errors for what they do not handle."""

from __future__ import annotations

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import torch
import warp as wp

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs.terrain_scene import terrain_contacts
from phalanx.sim.grid_contacts import tile_tops
from phalanx.terrain import TerrainCfg, add_terrain, generate_terrain
from phalanx.training.registry import env_cfg

_BODIES = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" conaffinity="3" friction="1.0 0.005 0.0001"/>
    <body name="ball"><freejoint/>
      <geom type="sphere" size="0.03" contype="2" conaffinity="0" friction="0.6 0.01 0.002" solmix="3"
            solref="0.03 1.3" solimp="0.8 0.9 0.002 0.5 2"/>
    </body>
    <body name="rod"><freejoint/>
      <geom type="capsule" size="0.045 0.14" contype="2" conaffinity="0" friction="1.2 0.002 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""


def _scene(horizontal_scale: float = 0.1, proportions: dict[str, float] | None = None):
    """A small terrain with a free sphere and a free capsule that collide with it, not each other."""
    proportions = proportions or {"random_rough": 1.0, "stairs_up": 1.0, "discrete_obstacles": 1.0}
    terrain = generate_terrain(
        TerrainCfg(num_rows=2, num_cols=3, tile_size=4.0, horizontal_scale=horizontal_scale, proportions=proportions)
    )
    spec = mujoco.MjSpec.from_string(_BODIES)
    add_terrain(spec, terrain)
    return terrain, spec.compile()


def _touching_poses(terrain, mjm, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, nq) poses of both bodies at random places and turns, each lowered until its lowest point
    is 0-4 mm below the highest grid point under it."""
    h = terrain.cfg.horizontal_scale
    span = (np.array(terrain.heights.shape) - 1) * h
    qpos = np.zeros((n, mjm.nq))
    for body, (radius, half) in enumerate(((0.03, 0.0), (0.045, 0.14))):
        quat = rng.standard_normal((n, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        xy = rng.uniform(0.5, span - 0.5, (n, 2))
        for w in range(n):
            mat = np.zeros(9)
            mujoco.mju_quat2Mat(mat, quat[w])
            axis = mat.reshape(3, 3)[:, 2] * half
            ends = np.stack((xy[w] - axis[:2], xy[w] + axis[:2]))
            lo = np.floor((ends.min(0) - radius) / h).astype(int)
            hi = np.ceil((ends.max(0) + radius) / h).astype(int) + 1
            top = terrain.heights[lo[0] : hi[0], lo[1] : hi[1]].max()
            z = top + radius + abs(axis[2]) - rng.uniform(0.0, 0.004)
            qpos[w, 7 * body : 7 * body + 7] = [*xy[w], z, *quat[w]]
    return qpos


def _mujoco_c_contacts(mjm: mujoco.MjModel, qpos: np.ndarray) -> list[dict[int, dict[str, np.ndarray]]]:
    """Per pose, the deepest terrain contact of each body geom by MuJoCo C (double precision):
    copies of its distance, normal and parameters."""
    data = mujoco.MjData(mjm)
    deepest = []
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_forward(mjm, data)
        found: dict[int, dict[str, np.ndarray]] = {}
        for i in range(data.ncon):
            c = data.contact[i]
            geom = int(max(c.geom))  # the body geom (the terrain's blocks come first)
            if geom not in found or c.dist < found[geom]["dist"]:
                found[geom] = {
                    "dist": float(c.dist), "normal": c.frame[:3].copy(), "friction": c.friction.copy(),
                    "solref": c.solref.copy(), "solimp": c.solimp.copy(), "dim": int(c.dim),
                }  # fmt: skip
        deepest.append(found)
    return deepest


def _grid(terrain, mjm: mujoco.MjModel, qpos: np.ndarray, nconmax: int = 16):
    """The grid contacts of every pose (worlds of one MuJoCo Warp data, on the CPU); the model
    with MuJoCo's terrain collision turned off."""
    mjm = mjm.__copy__()
    contacts = terrain_contacts(mjm, terrain).on(wp.get_device("cpu"))
    with wp.ScopedDevice("cpu"):
        m = mjw.put_model(mjm)
        d = mjw.make_data(mjm, nworld=len(qpos), nconmax=nconmax, njmax=4 * nconmax)
        d.qpos.assign(qpos.astype(np.float32))
        mjw.kinematics(m, d)
        d.nacon.zero_()
        d.contact.dist.fill_(np.nan)  # poisoned: unwritten entries fail
        contacts(m, d)
    return d


def test_the_deepest_contact_and_its_parameters_match_mujoco_c() -> None:
    terrain, mjm = _scene()
    qpos = _touching_poses(terrain, mjm, 300, np.random.default_rng(0))
    reference = _mujoco_c_contacts(mjm, qpos)
    d = _grid(terrain, mjm, qpos)
    n = int(d.nacon.numpy()[0])
    c = d.contact
    geom, world, dist = c.geom.numpy()[:n], c.worldid.numpy()[:n], c.dist.numpy()[:n]
    frame, friction = c.frame.numpy()[:n], c.friction.numpy()[:n]
    solref, solimp, dim = c.solref.numpy()[:n], c.solimp.numpy()[:n], c.dim.numpy()[:n]
    assert np.isfinite(dist).all()
    compared = 0
    for w, found in enumerate(reference):
        for g, ref in found.items():
            mine = np.flatnonzero((world == w) & (geom[:, 1] == g))
            assert mine.size, f"pose {w}: MuJoCo C has geom {g} {ref['dist'] * 1e3:.2f} mm deep, the grid nothing"
            k = mine[np.argmin(dist[mine])]
            assert dist[k] == pytest.approx(ref["dist"], abs=2e-5)
            angle = np.degrees(np.arccos(np.clip(frame[k][0] @ ref["normal"], -1.0, 1.0)))
            assert angle < 0.1, f"pose {w} geom {g}: normals {angle:.3f} degrees apart"
            np.testing.assert_allclose(friction[k], ref["friction"], rtol=1e-6)
            np.testing.assert_allclose(solref[k], ref["solref"], rtol=1e-6)
            np.testing.assert_allclose(solimp[k], ref["solimp"], rtol=1e-6)
            assert dim[k] == ref["dim"]
            compared += 1
        extra = set(geom[world == w, 1].tolist()) - set(found)
        assert not extra, f"pose {w}: the grid touches geoms {extra}, MuJoCo C does not"
    assert compared >= 250, "most lowered bodies touch (the highest grid point may lie off the geom)"
    assert np.all(np.bincount(world * mjm.ngeom + geom[:, 1]) <= 4), "at most four contacts per geom"


def test_a_capsule_on_more_prisms_than_held_keeps_four_spread_contacts() -> None:
    """A capsule lying 2 mm deep on a flat 5 mm grid touches hundreds of prisms (the kernel holds
    50 and scans again for the rest): four contacts, the deepest under its axis, the others
    spread along it (shallower, beside the axis)."""
    terrain, mjm = _scene(horizontal_scale=0.005, proportions={"flat": 1.0})
    qpos = np.zeros((1, mjm.nq))
    qpos[0, :7] = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]  # the sphere far above
    qpos[0, 7:] = [2.0, 2.0, 0.045 - 0.002, np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]  # axis along x
    d = _grid(terrain, mjm, qpos)
    n = int(d.nacon.numpy()[0])
    assert n == 4
    dist = d.contact.dist.numpy()[:n]
    assert dist[0] == pytest.approx(-0.002, abs=1e-6), "the first is the deepest, right under the axis"
    np.testing.assert_allclose(d.contact.frame.numpy()[0, 0], [0.0, 0.0, 1.0], atol=1e-5)
    assert np.all((dist >= -0.002 - 1e-6) & (dist < 0.0)), dist
    x = np.sort(d.contact.pos.numpy()[:n, 0])
    assert x[0] < 2.0 - 0.13 and x[-1] > 2.0 + 0.13, f"contacts at both ends of the capsule: {x}"


def test_geoms_below_the_terrain_static_and_mocap_ones_get_no_contacts() -> None:
    """A sphere 2 m under the terrain (below the prisms' bottom) touches nothing; geoms of a body
    welded to the world or of a mocap body never collide with it (MuJoCo's filter), whatever
    their type."""
    terrain, mjm = _scene(proportions={"flat": 1.0})
    qpos = np.zeros((1, mjm.nq))
    qpos[0, :7] = [2.0, 2.0, -2.0, 1.0, 0.0, 0.0, 0.0]
    qpos[0, 7:] = [3.0, 3.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert int(_grid(terrain, mjm, qpos).nacon.numpy()[0]) == 0
    spec = mujoco.MjSpec.from_string(
        _BODIES.replace(
            "</worldbody>",
            '<body name="post" pos="1 1 0"><geom type="box" size="0.1 0.1 0.3" contype="2"/></body>'
            '<body name="goal" mocap="true" pos="2 1 0"><geom type="sphere" size="0.1" contype="2"/></body>'
            "</worldbody>",
        )
    )
    add_terrain(spec, terrain)
    mjm = spec.compile()
    contacts = terrain_contacts(mjm, terrain)
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, int(mjm.geom_bodyid[g])) for g in contacts.colliders]
    assert names == ["ball", "rod"]


def test_tile_tops_are_the_highest_grid_point_of_each_tile() -> None:
    rng = np.random.default_rng(0)
    for shape in [(17, 25), (9, 9), (20, 11), (2, 2)]:
        heights = rng.standard_normal(shape)
        tiles = (-(-(shape[0] - 1) // 8), -(-(shape[1] - 1) // 8))
        expected = [
            [heights[a * 8 : a * 8 + 9, b * 8 : b * 8 + 9].max() for b in range(tiles[1])] for a in range(tiles[0])
        ]
        np.testing.assert_array_equal(tile_tops(heights, 8), expected)


def test_a_robot_standing_on_the_terrain_moves_as_with_mujocos_collision() -> None:
    """ANYmal standing still on rough terrain for 1 s: grid contacts and MuJoCo Warp's heightfield
    collision give the same base trajectory."""
    bases = {}
    for contacts in ("grid", "mujoco"):
        cfg = env_cfg("anymal-rough")
        cfg.terrain.num_rows, cfg.terrain.num_cols = 2, 7
        cfg.terrain.contacts = contacts
        cfg.observations["policy"]["height_scan"].noise = None
        env = make_cpu(cfg, num_envs=6, seed=2)
        path = []
        for _ in range(50):
            env.step(torch.zeros(env.num_envs, env.action_dim))
            path.append(env.sim.qpos[:, :3].clone())
        bases[contacts] = torch.stack(path)
    drop = (bases["grid"][0] - bases["grid"][-1]).abs().max()
    assert drop > 0.01, "the robots settled onto the ground"
    torch.testing.assert_close(bases["grid"], bases["mujoco"], atol=2e-3, rtol=0.0)


def test_a_box_colliding_with_the_grid_and_an_unknown_mode_name_the_field() -> None:
    terrain, _ = _scene()
    spec = mujoco.MjSpec.from_string(_BODIES.replace('type="sphere" size="0.03"', 'type="box" size="0.03 0.03 0.03"'))
    add_terrain(spec, terrain)
    mjm = spec.compile()
    with pytest.raises(ConfigError, match="env.terrain.contacts: .*'ball'.* is a box"):
        terrain_contacts(mjm, terrain)
    cfg = env_cfg("anymal-rough")
    cfg.terrain.contacts = "gjk"
    with pytest.raises(ConfigError, match="env.terrain.contacts: unknown contacts 'gjk'; allowed: 'grid', 'mujoco'"):
        make_cpu(cfg, num_envs=1)
