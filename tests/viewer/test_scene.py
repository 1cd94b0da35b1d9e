"""The viewer's scene without a browser: a model's geoms as triangle meshes, and where each env
goes in the view."""

from __future__ import annotations

import mujoco
import numpy as np

from phalanx.viewer.meshes import geom_meshes
from phalanx.viewer.poses import EnvPoses, grid_offsets

MODEL = """
<mujoco>
  <asset><hfield name="ground" nrow="3" ncol="4" size="2 1 0.5 0.1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <geom name="terrain" type="hfield" hfield="ground" pos="0 0 -1"/>
    <geom name="hidden" type="box" size="1 1 1" group="3"/>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom name="cube" type="box" size="0.1 0.2 0.3" rgba="1 0 0 1"/>
      <geom name="ball" type="sphere" size="0.05" pos="0 0 0.5"/>
    </body>
  </worldbody>
</mujoco>
"""


def _model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(MODEL)


def test_each_visible_geom_is_a_closed_mesh_of_its_size() -> None:
    """The box's mesh spans twice its half sizes, the height field has a vertex per sample (its
    elevations scaled by its top), group 3 (collision-only) is left out."""
    mjm = _model()
    mjm.hfield_data[:] = np.linspace(0.0, 1.0, 12)
    meshes = {m.name: m for m in geom_meshes(mjm)}
    assert set(meshes) == {"floor", "terrain", "cube", "ball"}
    cube = meshes["cube"]
    np.testing.assert_allclose(np.ptp(cube.vertices, axis=0), [0.2, 0.4, 0.6], atol=1e-6)
    assert cube.color == (255, 0, 0) and not cube.static and not cube.plane
    terrain = meshes["terrain"]
    assert terrain.vertices.shape == (12, 3) and terrain.faces.shape == (2 * 2 * 3, 3)
    np.testing.assert_allclose(terrain.vertices[:, 2].max(), 0.5)  # the top elevation x size[2]
    assert terrain.static and meshes["floor"].plane


def test_poses_follow_each_envs_state() -> None:
    """Two envs' cube poses: where their free joints put them, plus each env's place in the view."""
    mjm = _model()
    qpos = np.tile(mjm.qpos0, (2, 1))
    qpos[1, :3] = (0.0, 0.0, 2.0)
    qpos[1, 3:7] = (np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4))  # 90 degrees about z
    cube = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "cube")
    poses = EnvPoses(mjm, [cube], qpos)
    positions, quats = poses(qpos, np.zeros((2, 0, 3)), np.zeros((2, 0, 4)))
    np.testing.assert_allclose(positions[:, 0] - poses.offsets, [[0, 0, 1], [0, 0, 2]], atol=1e-6)
    np.testing.assert_allclose(np.abs(quats[1, 0]), [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-6)


def test_envs_in_one_spot_get_a_grid_and_spread_envs_stay() -> None:
    """Nine envs that start together get nine distinct places a cell apart; envs that start far
    apart (a terrain's origins) stay where they are."""
    mjm = mujoco.MjModel.from_xml_string(
        MODEL.replace('<geom name="terrain" type="hfield" hfield="ground" pos="0 0 -1"/>', "")
    )
    together = np.tile(mjm.qpos0, (9, 1))
    offsets = grid_offsets(mjm, together)
    assert len({tuple(o) for o in offsets.round(6)}) == 9
    assert np.all(offsets[:, 2] == 0)
    gaps = np.abs(offsets[:, None, :2] - offsets[None, :, :2]).max(axis=-1) + np.eye(9) * 1e9
    assert gaps.min() >= 0.4  # the cube's 0.2 x 0.4 footprint (with the ball) plus the margin
    apart = together.copy()
    apart[:, 0] = np.arange(9) * 10.0
    assert not grid_offsets(mjm, apart).any()


def test_a_large_height_field_is_drawn_with_fewer_samples_over_the_same_extent() -> None:
    """A 1200 x 900 height field (a terrain of many blocks) keeps at most HFIELD_SAMPLES vertices,
    still spanning its [-x, x] x [-y, y]."""
    from phalanx.viewer.meshes import HFIELD_SAMPLES

    mjm = mujoco.MjModel.from_xml_string(
        '<mujoco><asset><hfield name="t" nrow="900" ncol="1200" size="60 45 2 0.1"/></asset>'
        '<worldbody><geom type="hfield" hfield="t"/></worldbody></mujoco>'
    )
    (terrain,) = geom_meshes(mjm)
    assert len(terrain.vertices) <= HFIELD_SAMPLES
    np.testing.assert_allclose(terrain.vertices[:, :2].min(axis=0), [-60, -45])
    assert terrain.vertices[:, 0].max() > 59.5 and terrain.vertices[:, 1].max() > 44.5
