"""The Franka-Panda-like MJCF (phalanx/assets/franka.xml) and its task scenes (franka_reach.xml,
franka_lift.xml, franka_cabinet.xml), checked with MuJoCo C: the "ee" site against Franka's
published DH forward kinematics, the published joint ranges and torque limits, a gripper whose
fingers move together, a goal marker that is only seen, a grasp that lifts the cube, a drawer that
moves only along its joint, and stepping under random torques without NaN."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from phalanx.assets import asset_path
from phalanx.sim.actuators import ActuatorCfg, apply_actuators

SCENES = ("franka.xml", "franka_reach.xml", "franka_lift.xml", "franka_cabinet.xml")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]
HOME = [0.0, -0.569, 0.0, -2.810, 0.0, 3.037, 0.741]
"""Isaac Lab's Franka default arm pose (rad)."""

DH = [  # Franka's modified (Craig) DH parameters: a (m), d (m), alpha (rad), one row per joint
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
]
FLANGE_D = 0.107
EE_OFFSET = 0.1034  # grasp point past the flange along the hand's z (libfranka's default end effector)
RANGES = {
    "panda_joint1": (-2.8973, 2.8973),
    "panda_joint2": (-1.7628, 1.7628),
    "panda_joint3": (-2.8973, 2.8973),
    "panda_joint4": (-3.0718, -0.0698),
    "panda_joint5": (-2.8973, 2.8973),
    "panda_joint6": (-0.0175, 3.7525),
    "panda_joint7": (-2.8973, 2.8973),
    "panda_finger_joint1": (0.0, 0.04),
    "panda_finger_joint2": (0.0, 0.04),
}
"""Franka's published joint ranges (rad; m for the fingers)."""
TORQUE_LIMITS = [87.0] * 4 + [12.0] * 3
"""Franka's published joint torque limits (N m)."""


def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """Craig's link transform Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d), (4, 4)."""
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array(
        [
            [ct, -st, 0.0, a],
            [st * ca, ct * ca, -sa, -d * sa],
            [st * sa, ct * sa, ca, d * ca],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def dh_ee(q: np.ndarray) -> np.ndarray:
    """(4, 4) world pose of the grasp point for arm joints `q` (7,): the DH chain, the flange (d 0.107),
    the hand turned -45 deg about z, then 0.1034 along the hand's z."""
    pose = np.eye(4)
    for (a, d, alpha), theta in zip(DH, q, strict=True):
        pose = pose @ _dh(a, d, alpha, theta)
    pose = pose @ _dh(0.0, FLANGE_D, 0.0, -math.pi / 4)
    return pose @ _dh(0.0, EE_OFFSET, 0.0, 0.0)


def _top_down(x: float, z: float) -> np.ndarray:
    """Arm joints (7,) that put the grasp point at (x, 0, z), hand pointing down, fingers along y:
    joints 1, 3, 5 at 0, joint 7 at pi/4, joint 6 = joint 2 - joint 4 (the hand vertical), and
    joints 2 and 4 by Newton's method on the DH chain."""

    def pose(q24: np.ndarray) -> np.ndarray:
        return np.array([0.0, q24[0], 0.0, q24[1], 0.0, q24[0] - q24[1], math.pi / 4])

    def error(q24: np.ndarray) -> np.ndarray:
        p = dh_ee(pose(q24))[:3, 3]
        return np.array([p[0] - x, p[2] - z])

    q24 = np.array([0.0, -2.0])
    for _ in range(30):
        r = error(q24)
        jac = np.stack([(error(q24 + h) - r) / 1e-7 for h in np.eye(2) * 1e-7], axis=1)
        q24 = q24 - np.linalg.solve(jac, r)
    assert np.abs(error(q24)).max() < 1e-9
    return pose(q24)


def _with_arm_actuators(name: str, cfg: ActuatorCfg) -> mujoco.MjModel:
    """The scene `name` with the arm joints given actuators, as a task does."""
    spec = mujoco.MjSpec.from_file(asset_path(name))
    apply_actuators(spec, [cfg])
    return spec.compile()


def _home(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    return data


@pytest.mark.parametrize("name", SCENES)
def test_scene_compiles_with_the_arm_at_its_home_pose(name) -> None:
    model = mujoco.MjModel.from_xml_path(asset_path(name))
    assert [model.joint(i).name for i in range(9)] == ARM + FINGERS, "the robot's 9 joints come first"
    assert model.body("panda_link0").dofnum == 0 and model.body("panda_link0").parentid == 0, "fixed base"
    np.testing.assert_allclose(model.body("panda_link0").pos, 0.0)
    assert [model.actuator(i).name for i in range(model.nu)] == ["gripper"], "tasks give the arm its actuators"
    data = _home(model)
    np.testing.assert_allclose(data.qpos[:9], HOME + [0.04, 0.04])
    np.testing.assert_allclose(data.ctrl, [0.04])
    bodies = {model.body(model.geom_bodyid[g]).name for c in data.contact[: data.ncon] for g in c.geom}
    assert bodies <= {"world", "cube"}, f"at home only the cube touches the table, got {bodies}"
    if name == "franka_reach.xml":  # the goal marker: a mocap body, seen and never touched
        goal = model.body("goal")
        assert goal.mocapid[0] == 0 and goal.jntnum[0] == 0
        markers = model.geom_bodyid == goal.id
        assert markers.sum() == 4
        assert not model.geom_contype[markers].any() and not model.geom_conaffinity[markers].any()
        arm = mujoco.MjModel.from_xml_path(asset_path("franka.xml"))
        np.testing.assert_array_equal(model.body_mass[: arm.nbody], arm.body_mass)
    if name == "franka_lift.xml":
        cube = model.body("cube")
        assert model.jnt_type[cube.jntadr[0]] == mujoco.mjtJoint.mjJNT_FREE
        np.testing.assert_allclose(model.geom("cube").size, [0.025] * 3)
        assert model.body_mass[cube.id] == pytest.approx(0.1)
        np.testing.assert_allclose(data.body("cube").xpos, [0.5, 0.0, 0.025])
        for _ in range(100):  # 0.5 s: the cube rests on the table
            mujoco.mj_step(model, data)
        np.testing.assert_allclose(data.body("cube").xpos, [0.5, 0.0, 0.025], atol=1e-3)
    if name == "franka_cabinet.xml":
        joint = model.joint("drawer_joint")
        assert joint.type == mujoco.mjtJoint.mjJNT_SLIDE and model.body(joint.bodyid[0]).name == "drawer"
        np.testing.assert_allclose(joint.range, [0.0, 0.4])
        assert data.joint("drawer_joint").qpos[0] == 0.0
        assert 0.7 < data.site("handle").xpos[0] < 0.85 and 0.3 < data.site("handle").xpos[2] < 0.6


@pytest.mark.parametrize("q", [HOME, [0.0] * 7, [0.3, -0.5, 0.8, -1.9, -1.2, 2.2, -0.4]], ids=["home", "zero", "other"])
def test_ee_site_matches_franka_dh_kinematics(q) -> None:
    model = mujoco.MjModel.from_xml_path(asset_path("franka.xml"))
    data = mujoco.MjData(model)
    data.qpos[:7] = q
    mujoco.mj_forward(model, data)
    expected = dh_ee(np.array(q))
    np.testing.assert_allclose(data.site("ee").xpos, expected[:3, 3], atol=1e-3)
    np.testing.assert_allclose(data.site("ee").xmat.reshape(3, 3), expected[:3, :3], atol=1e-3)
    if q == [0.0] * 7:  # the arm straight up: flange at (0.088, 0, 0.926), grasp point 0.1034 below
        np.testing.assert_allclose(data.site("ee").xpos, [0.088, 0.0, 0.926 - 0.1034], atol=1e-6)


def test_joint_ranges_and_torque_limits_are_franka_s() -> None:
    model = mujoco.MjModel.from_xml_path(asset_path("franka.xml"))
    for name, (low, high) in RANGES.items():
        joint = model.joint(name)
        np.testing.assert_allclose(joint.range, (low, high), err_msg=name)
        assert model.jnt_limited[joint.id], name
    for name, limit in zip(ARM, TORQUE_LIMITS, strict=True):
        assert model.jnt_actfrclimited[model.joint(name).id], name
        np.testing.assert_allclose(model.jnt_actfrcrange[model.joint(name).id], (-limit, limit), err_msg=name)
    gripper = model.actuator("gripper")
    np.testing.assert_allclose(gripper.ctrlrange, (0.0, 0.04))
    np.testing.assert_allclose(gripper.forcerange, (-140.0, 140.0))  # 70 N per finger through the tendon


def test_gripper_opens_and_closes_with_its_fingers_together() -> None:
    model = mujoco.MjModel.from_xml_path(asset_path("franka.xml"))
    data = _home(model)
    for target in (0.0, 0.02, 0.04, 0.0):
        data.ctrl[model.actuator("gripper").id] = target
        for _ in range(100):  # 0.5 s
            mujoco.mj_step(model, data)
            q1, q2 = data.joint(FINGERS[0]).qpos[0], data.joint(FINGERS[1]).qpos[0]
            assert abs(q1 - q2) < 1e-3
        assert q1 == pytest.approx(target, abs=1e-3) and q2 == pytest.approx(target, abs=1e-3), target


@pytest.mark.parametrize("timestep", [None, 0.01], ids=["model_dt", "10ms"])
def test_gripper_holds_the_cube_while_the_arm_lifts_it(timestep) -> None:
    model = _with_arm_actuators("franka_lift.xml", ActuatorCfg("panda_joint.*", kp=1000.0, kd=50.0))
    model.opt.timestep = timestep or model.opt.timestep  # the model's 5 ms, and the longest step it is made for
    data = mujoco.MjData(model)
    arm = [model.actuator(name).id for name in ARM]
    gripper = model.actuator("gripper").id
    grasp, lifted = _top_down(0.5, 0.03), _top_down(0.5, 0.25)
    data.qpos[:7] = data.ctrl[arm] = grasp  # the open fingers straddle the cube, the pads at its middle
    data.qpos[7:9] = data.ctrl[gripper] = 0.04
    mujoco.mj_forward(model, data)
    assert data.ncon == 4, "only the cube touches anything (the table)"
    dt = model.opt.timestep
    for i in range(round(3.0 / dt)):
        t = i * dt
        data.ctrl[gripper] = 0.0 if t > 0.2 else 0.04
        s = min(max((t - 0.6) / 0.8, 0.0), 1.0)  # lift from 0.6 s to 1.4 s, hold to 3 s
        data.ctrl[arm] = (1 - s) * grasp + s * lifted
        mujoco.mj_step(model, data)
        cube, ee = data.body("cube").xpos, data.site("ee").xpos
        if t > 0.5:
            assert np.linalg.norm(cube - ee) < 0.01, f"at {t:.2f} s the cube is at {cube}, the ee at {ee}"
        if abs(t - 0.5) < dt / 2:  # closed on the 5 cm cube with the full 70 N per finger
            np.testing.assert_allclose(data.qpos[7:9], 0.025, atol=1e-3)
            assert data.actuator_force[gripper] == pytest.approx(-140.0)
    assert data.body("cube").xpos[2] > 0.24


def test_drawer_slides_only_along_its_joint_within_its_range() -> None:
    model = mujoco.MjModel.from_xml_path(asset_path("franka_cabinet.xml"))
    data = _home(model)
    data.qpos[:7] = 0.0  # the arm upright, out of the open drawer's way
    mujoco.mj_forward(model, data)
    drawer, handle = model.body("drawer").id, model.site("handle").id
    start_pos, start_quat = data.xpos[drawer].copy(), data.xquat[drawer].copy()
    qpos = []
    # 1 s each, at the handle (N, world frame): sideways, down, diagonal; then out, in, out, with some
    # sideways force: 20 N along the joint slams the 1.5 kg drawer into its ends at about 2.5 m/s.
    for force in ([0, 80, 0], [0, 0, -80], [0, -60, 60], [-20, 50, 0], [20, 0, 30], [-20, -30, -30]):
        for _ in range(200):
            data.qfrc_applied[:] = 0
            mujoco.mj_applyFT(
                model, data, np.array(force, float), np.zeros(3), data.site_xpos[handle], drawer, data.qfrc_applied
            )
            mujoco.mj_step(model, data)
            mujoco.mj_kinematics(model, data)  # the poses of the new qpos (mj_step leaves those of the old)
            moved = data.xpos[drawer] - start_pos
            np.testing.assert_allclose(moved[1:], 0.0, atol=1e-9)  # only along world x (the joint's axis)
            np.testing.assert_allclose(data.xquat[drawer], start_quat, atol=1e-9)
            assert moved[0] == pytest.approx(-data.joint("drawer_joint").qpos[0], abs=1e-9)
            qpos.append(data.joint("drawer_joint").qpos[0])
    qpos = np.array(qpos)
    assert np.abs(qpos[:600]).max() < 1e-3, "sideways, downward and diagonal forces do not move it"
    assert qpos[600:800].max() > 0.39 and qpos[800:1000].min() < 0.01 and qpos[-1] > 0.39, "out, in, out"
    assert qpos.min() > -0.01 and qpos.max() < 0.41, "within 0..0.4 m (soft limits: under 1 cm past an end)"


@pytest.mark.parametrize("name", SCENES)
def test_scene_steps_2_s_of_random_arm_torques_without_nan(name) -> None:
    model = _with_arm_actuators(name, ActuatorCfg("panda_joint.*", kind="torque", effort_limit=87.0))
    data = _home(model)
    arm = [model.actuator(joint).id for joint in ARM]
    rng = np.random.default_rng(0)
    for _ in range(round(2.0 / model.opt.timestep)):
        data.ctrl[arm] = rng.uniform(-87.0, 87.0, 7)
        data.ctrl[model.actuator("gripper").id] = rng.uniform(0.0, 0.04)
        mujoco.mj_step(model, data)
    assert np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all()
    assert data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    assert (np.abs(data.qfrc_actuator[:7]) <= np.array(TORQUE_LIMITS) + 1e-9).all(), "torques capped per joint"
