"""The page's contact force arrows: what `ContactForces` reads is the force on each contact's second
geom, in the world frame, for the first envs only; arrows point along it."""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from helpers import unused_port
from phalanx.sim import SimCfg, Simulator
from phalanx.viewer.contacts import ContactForces
from phalanx.viewer.poses import arrow_quats

MASS = 2.0
BOX = f"""
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0 0 0.1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="{MASS}"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_a_resting_box_is_held_up_by_its_weight_and_only_the_first_envs_are_read() -> None:
    """A box settled on the floor: the forces on it sum to its weight, straight up (equilibrium,
    to the solver's tolerance), at points on the floor under it; of 3 envs, the 2 shown are read."""
    sim = Simulator(mujoco.MjModel.from_xml_string(BOX), 3, "cpu", SimCfg(decimation=10))
    sim.qpos[2, 0] = 1.0  # the third box stands elsewhere: none of its contacts may show
    for _ in range(50):  # 1 s
        sim.step()
    points, forces, envs = ContactForces(sim, k=3, limit=256).read(shown=2)
    assert set(envs.tolist()) == {0, 1}
    weight = MASS * 9.81
    for env in (0, 1):
        total = forces[envs == env].sum(axis=0)
        np.testing.assert_allclose(total, [0.0, 0.0, weight], atol=0.01 * weight)
        mine = points[envs == env]
        assert np.all(np.abs(mine[:, :2]) <= 0.1 + 1e-3) and np.all(np.abs(mine[:, 2]) < 0.01)
    fewest = ContactForces(sim, k=3, limit=3).read(shown=2)[1]
    sizes = np.linalg.norm(forces, axis=1)
    np.testing.assert_allclose(np.sort(np.linalg.norm(fewest, axis=1)), np.sort(sizes)[-3:])
    assert torch.isfinite(sim.qpos).all()


def test_arrows_turn_the_x_axis_onto_each_force() -> None:
    forces = np.array([[0.0, 0.0, 5.0], [-2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [3.0, 0.0, 0.0], [-1.0, 0.5, -2.0]])
    for force, quat in zip(forces, arrow_quats(forces), strict=True):
        rotation = np.zeros(9)
        mujoco.mju_quat2Mat(rotation, quat)
        np.testing.assert_allclose(rotation.reshape(3, 3)[:, 0], force / np.linalg.norm(force), atol=1e-12)


def test_the_view_draws_the_contact_forces_when_the_page_asks() -> None:
    """anymal-flat standing: with the page's "contact forces" box ticked, `phalanx view`'s loop
    draws an arrow at each foot's contact of the shown envs, pointing up; unticked, none."""
    from rich.console import Console

    from phalanx.training.registry import make
    from phalanx.view import ViewCfg, _run
    from phalanx.viewer.markers import host_array
    from phalanx.viewer.server import HIDDEN, Viewer

    env = make("anymal-flat", num_envs=2, device="cpu")
    viewer = Viewer(env.sim.mjm, "test", host_array(env.sim.qpos), "127.0.0.1", unused_port(), 2, contacts=True)
    cfg = ViewCfg(task="anymal-flat", steps=25, realtime=False)
    act = lambda obs: torch.zeros(2, env.action_dim)  # noqa: E731
    try:
        viewer.contacts_box.value = True
        _run(env, act, viewer, cfg, 2, None, None, Console(quiet=True))
        one_step = ViewCfg(task="anymal-flat", steps=1, realtime=False)  # its first frame is drawn after its step
        _run(env, act, viewer, one_step, 2, None, None, Console(quiet=True))
        drawn = viewer._arrows.batched_positions[:, 2] > HIDDEN[2] / 2
        assert drawn.sum() >= 4  # the feet of both envs (at least two each)
        rises = []  # each arrow's direction's z: its rotation matrix's (z, x) entry
        for quat in viewer._arrows.batched_wxyzs[drawn]:
            rotation = np.zeros(9)
            mujoco.mju_quat2Mat(rotation, quat.astype(np.float64))
            rises.append(rotation[6])
        assert np.mean(rises) > 0.5  # mostly upward
        viewer.contacts_box.value = False
        _run(env, act, viewer, one_step, 2, None, None, Console(quiet=True))
        assert not np.any(viewer._arrows.batched_positions[:, 2] > HIDDEN[2] / 2)
    finally:
        viewer.stop()
