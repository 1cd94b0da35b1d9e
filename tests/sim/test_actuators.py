"""Actuators from config (`ActuatorCfg`) on models that have none or others, checked with MuJoCo C."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from phalanx.core.errors import ConfigError
from phalanx.sim.actuators import ActuatorCfg, apply_actuators
from phalanx.sim.model import build_model, load_spec

# A gravity-free 2-link arm on a fixed base, without actuators; the shoulder is limited (degrees).
ARM = """<mujoco>
  <option gravity="0 0 0"/>
  <default><geom contype="0" conaffinity="0"/>{defaults}</default>
  <worldbody>
    <body name="base">
      <geom type="cylinder" size=".05 .05"/>
      <body name="upper" pos="0 0 .1">
        <joint name="shoulder" axis="0 1 0" range="-90 90"/>
        <geom type="capsule" fromto="0 0 0 0 0 .4" size=".03"/>
        <body name="lower" pos="0 0 .4">
          <joint name="elbow" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 .4" size=".03"/>
        </body>
      </body>
    </body>
  </worldbody>
  {actuators}
</mujoco>"""

URDF = """<robot name="arm">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0 0 0.2"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0 0 0.2"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="30" velocity="10"/></joint>
  <joint name="elbow" type="continuous"><origin xyz="0 0 0.4"/><parent link="upper"/><child link="lower"/>
    <axis xyz="0 1 0"/></joint>
</robot>
"""


def arm(defaults: str = "", actuators: str = "") -> str:
    return ARM.format(defaults=defaults, actuators=actuators)


def simulate(mjm: mujoco.MjModel, ctrl: list[float], seconds: float) -> mujoco.MjData:
    data = mujoco.MjData(mjm)
    data.ctrl[:] = ctrl
    for _ in range(round(seconds / mjm.opt.timestep)):
        mujoco.mj_step(mjm, data)
    return data


def actuator_names(mjm: mujoco.MjModel) -> list[str]:
    return [mjm.actuator(i).name for i in range(mjm.nu)]


def test_position_actuators_make_a_bare_arm_track_a_target() -> None:
    mjm = build_model(arm(), [ActuatorCfg("shoulder|elbow", "position", kp=50.0, kd=5.0)])
    assert actuator_names(mjm) == ["shoulder", "elbow"]
    # The limited shoulder's range is the control range (in radians); the elbow's control is free.
    np.testing.assert_allclose(mjm.actuator_ctrlrange[0], [-math.pi / 2, math.pi / 2])
    assert mjm.actuator_ctrllimited.tolist() == [1, 0]
    data = simulate(mjm, [0.5, -0.8], seconds=2.0)
    np.testing.assert_allclose(data.qpos, [0.5, -0.8], atol=1e-3)
    np.testing.assert_allclose(data.qvel, [0.0, 0.0], atol=1e-3)


def test_torque_actuators_apply_the_commanded_torque_clamped_at_the_effort_limit() -> None:
    for effort_limit, expected in ((2.0, [1.5, 2.0, -2.0]), (None, [1.5, 5.0, -7.0])):
        mjm = build_model(arm(), [ActuatorCfg(".*", "torque", effort_limit=effort_limit)])
        data = mujoco.MjData(mjm)
        for ctrl, force in zip((1.5, 5.0, -7.0), expected, strict=True):
            data.ctrl[:] = ctrl
            mujoco.mj_forward(mjm, data)
            np.testing.assert_allclose(data.actuator_force, [force, force])
            np.testing.assert_allclose(data.qfrc_actuator, [force, force])  # gear 1: torque = force


def test_velocity_actuators_track_a_velocity() -> None:
    mjm = build_model(arm(), [ActuatorCfg(".*", "velocity", kd=20.0)])
    data = simulate(mjm, [1.0, -0.5], seconds=1.0)
    np.testing.assert_allclose(data.qvel, [1.0, -0.5], atol=1e-2)  # Coriolis torques / kd leave a small lag


def test_armature_is_set_on_the_matched_joints_only() -> None:
    mjm = build_model(arm(), [ActuatorCfg("elbow", "torque", armature=0.05)])
    np.testing.assert_allclose(mjm.dof_armature, [0.0, 0.05])


def test_existing_actuators_of_matched_joints_are_replaced_and_defaults_do_not_leak() -> None:
    defaults = '<general gear="7" ctrlrange="-1 1" ctrllimited="true" forcerange="-3 3" forcelimited="true"/>'
    actuators = '<actuator><motor name="m_shoulder" joint="shoulder"/><motor name="m_elbow" joint="elbow"/></actuator>'
    mjm = build_model(arm(defaults, actuators), [ActuatorCfg("elbow", "velocity", kd=4.0)])
    assert actuator_names(mjm) == ["m_shoulder", "elbow"]  # untouched ones first
    new = mjm.actuator("elbow")
    assert new.trnid[0] == mjm.joint("elbow").id
    np.testing.assert_allclose(new.gainprm[:1], [4.0])
    np.testing.assert_allclose(new.biasprm[:3], [0.0, 0.0, -4.0])
    np.testing.assert_allclose(new.gear, [1, 0, 0, 0, 0, 0])  # not the default class's 7
    assert (new.ctrllimited, new.forcelimited) == (0, 0)
    np.testing.assert_allclose(mjm.actuator("m_shoulder").gear[0], 7.0)


def test_a_urdf_robot_gets_actuators(tmp_path: Path) -> None:
    cfgs = [
        ActuatorCfg("shoulder", "position", kp=200.0, kd=10.0, effort_limit=30.0),
        ActuatorCfg("elbow", "position", kp=200.0, kd=10.0),
    ]
    spec = mujoco.MjSpec.from_string(URDF)
    apply_actuators(spec, cfgs)
    mjm = spec.compile()
    assert actuator_names(mjm) == ["shoulder", "elbow"]
    np.testing.assert_allclose(mjm.actuator_ctrlrange[0], [-1.5, 1.5])
    np.testing.assert_allclose(mjm.actuator_forcerange[0], [-30.0, 30.0])
    path = tmp_path / "arm.urdf"
    path.write_text(URDF)
    from_file = build_model(path, cfgs)  # load_spec reads URDF files too
    np.testing.assert_array_equal(from_file.actuator_biasprm, mjm.actuator_biasprm)
    # Under gravity kp leaves a sag: at most (1 kg x 0.2 m + 1 kg x 0.6 m) x 9.81 m/s^2 / 200 = 0.04 rad.
    data = simulate(mjm, [0.6, -0.4], seconds=2.0)
    np.testing.assert_allclose(data.qpos, [0.6, -0.4], atol=0.04)
    np.testing.assert_allclose(data.qvel, [0.0, 0.0], atol=1e-3)


def test_edit_runs_after_the_actuators_are_added() -> None:
    seen = []
    build_model(arm(), [ActuatorCfg(".*", "torque")], edit=lambda spec: seen.append(len(spec.actuators)))
    assert seen == [2]


@pytest.mark.parametrize(
    ("cfgs", "field", "says"),
    [
        ([ActuatorCfg(".*", "force")], "actuators[0].kind", "must be one of ['position', 'velocity', 'torque']"),
        ([ActuatorCfg(".*", "position", kp=-1.0)], "actuators[0].kp", "got -1.0"),
        ([ActuatorCfg(".*", "position")], "actuators[0].kp", "> 0 for a position actuator"),
        ([ActuatorCfg(".*", "torque", kp=5.0)], "actuators[0].kp", "torque actuators do not use it"),
        ([ActuatorCfg(".*", "torque", ctrl_range=(1.0, -1.0))], "actuators[0].ctrl_range", "low < high"),
        ([ActuatorCfg("(", "torque")], "actuators[0].joints", "not a regular expression"),
        ([ActuatorCfg("wrist.*", "torque")], "actuators[0].joints", "the model has ['shoulder', 'elbow']"),
        (
            [ActuatorCfg(".*", "torque"), ActuatorCfg("elbow", "torque")],
            "actuators[1].joints",
            "'elbow' is already matched by actuators[0]",
        ),
    ],
)
def test_bad_actuator_configs_name_the_field_and_edit_nothing(cfgs, field: str, says: str) -> None:
    spec = load_spec(arm())
    with pytest.raises(ConfigError) as raised:
        apply_actuators(spec, cfgs)
    assert raised.value.field == field
    assert says in str(raised.value)
    assert spec.compile().nu == 0
