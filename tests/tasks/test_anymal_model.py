"""The quadruped asset: PD position actuators as documented, and it stands on MuJoCo Warp as on
MuJoCo C, with its weight on the foot touch sensors."""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from phalanx.assets import asset_path
from phalanx.sim import SimCfg, Simulator, load_model

KP, KD, TORQUE_LIMIT = 80.0, 2.0, 80.0


def _home(mjm: mujoco.MjModel) -> mujoco.MjData:
    d = mujoco.MjData(mjm)
    mujoco.mj_resetDataKeyframe(mjm, d, mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_KEY, "home"))
    return d


def test_actuators_are_pd_position_controllers_with_torque_limits() -> None:
    mjm = load_model(asset_path("anymal.xml"))
    assert mjm.nu == 12 and 45.0 < mjm.body_subtreemass[1] < 55.0
    d = _home(mjm)
    rng = np.random.default_rng(0)
    d.qvel[6:] = rng.uniform(-20, 20, 12)
    d.ctrl[:] = d.qpos[7:] + rng.uniform(-3, 3, 12)  # some beyond the joint range
    mujoco.mj_forward(mjm, d)
    target = np.clip(d.ctrl, mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1])  # the joint ranges
    np.testing.assert_allclose(mjm.actuator_ctrlrange, mjm.jnt_range[1:], atol=1e-12)
    expected = np.clip(KP * (target - d.qpos[7:]) - KD * d.qvel[6:], -TORQUE_LIMIT, TORQUE_LIMIT)
    np.testing.assert_allclose(d.actuator_force, expected, rtol=1e-6, atol=1e-6)
    assert np.abs(d.actuator_force).max() == TORQUE_LIMIT


def test_stands_on_its_feet_on_warp_as_on_mujoco_c() -> None:
    mjm = load_model(asset_path("anymal.xml"))
    steps = 300  # 1.5 s: the drop from the spawn height settles
    d = _home(mjm)
    for _ in range(steps):
        mujoco.mj_step(mjm, d)
    sim = Simulator(load_model(asset_path("anymal.xml")), 2, "cpu", SimCfg(decimation=1))
    sim.reset_(torch.ones(2, dtype=torch.bool))
    sim.ctrl[:] = torch.as_tensor(_home(mjm).ctrl, dtype=torch.float32)
    for _ in range(steps):
        sim.step()
    base_z = sim.qpos[:, 2]
    assert torch.all((base_z > 0.45) & (base_z < 0.6)), base_z
    np.testing.assert_allclose(base_z.numpy(), d.qpos[2], atol=5e-3)
    assert torch.all(sim.qpos[:, 3] > 0.999), "upright"
    weight = mjm.body_subtreemass[1] * -mjm.opt.gravity[2]
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in range(mjm.nsensor)]
    feet = [names.index(f"{leg}_foot_contact") for leg in ("LF", "RF", "LH", "RH")]
    others = [i for i in range(mjm.nsensor) if i not in feet]
    np.testing.assert_allclose(sim.sensordata[:, feet].sum(dim=1).numpy(), weight, rtol=0.03)
    assert torch.all(sim.sensordata[:, feet] > 0.15 * weight), "every foot carries load"
    assert torch.all(sim.sensordata[:, others] == 0), "no thigh or base contact"


def test_a_robot_holding_its_pose_does_not_creep() -> None:
    """Feet stay where they landed: friction holds the splay of the legs under the robot's weight."""
    mjm = load_model(asset_path("anymal.xml"))
    d = _home(mjm)
    d.ctrl[:] = d.qpos[7:]
    feet = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, f"{leg}_foot") for leg in ("LF", "RF", "LH", "RH")]
    for _ in range(200):  # 1 s: the drop from the spawn height settles
        mujoco.mj_step(mjm, d)
    landed = d.geom_xpos[feet, :2].copy()
    for _ in range(1000):  # 5 s more
        mujoco.mj_step(mjm, d)
    slide = np.linalg.norm(d.geom_xpos[feet, :2] - landed, axis=1)
    assert slide.max() < 0.01, f"feet slid {slide} m in 5 s"
