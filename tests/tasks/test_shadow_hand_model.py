"""The Shadow-Hand-like MJCF (phalanx/assets/shadow_hand.xml), checked with MuJoCo C: the
published hand's kinematic tree and joint ranges, 20 actuators of which four drive a finger's
J1 + J2 through a tendon with the distal joint following the middle one, and the cube resting on
the palm while the hand holds its default pose."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from phalanx.assets import asset_path

DEG = math.pi / 180
RANGES = {
    "WRJ2": (-30, 10),
    "WRJ1": (-40, 28),
    **{f"{f}J4": (-20, 20) for f in ("FF", "MF", "RF", "LF")},
    **{f"{f}J3": (-15, 90) for f in ("FF", "MF", "RF", "LF")},
    **{f"{f}J{j}": (0, 90) for f in ("FF", "MF", "RF", "LF") for j in (1, 2)},
    "LFJ5": (0, 45),
    "THJ5": (-60, 60),
    "THJ4": (0, 70),
    "THJ3": (-12, 12),
    "THJ2": (-40, 40),
    "THJ1": (-15, 90),
}
"""The published joint ranges, in degrees."""

CHAINS = {
    "FF": ["ffdistal", "ffmiddle", "ffproximal", "ffknuckle", "palm", "wrist", "forearm"],
    "MF": ["mfdistal", "mfmiddle", "mfproximal", "mfknuckle", "palm", "wrist", "forearm"],
    "RF": ["rfdistal", "rfmiddle", "rfproximal", "rfknuckle", "palm", "wrist", "forearm"],
    "LF": ["lfdistal", "lfmiddle", "lfproximal", "lfknuckle", "lfmetacarpal", "palm", "wrist", "forearm"],
    "TH": ["thdistal", "thmiddle", "thhub", "thproximal", "thbase", "palm", "wrist", "forearm"],
}


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(asset_path("shadow_hand.xml"))


def _home(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    return data


def test_24_hinges_in_the_published_tree_with_the_published_ranges(model) -> None:
    hinges = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE]
    assert sorted(hinges) == sorted(RANGES) and len(hinges) == 24
    for name, (low, high) in RANGES.items():
        np.testing.assert_allclose(model.joint(name).range, (low * DEG, high * DEG), atol=1e-4, err_msg=name)
        assert model.jnt_limited[model.joint(name).id], name
    for finger, chain in CHAINS.items():
        body = model.body(chain[0]).id
        names = []
        while body != 0:
            names.append(model.body(body).name)
            body = model.body_parentid[body]
        assert names == chain, finger
    assert model.body("forearm").dofnum == 0, "the forearm is fixed in the world"
    assert model.body("cube").jntnum == 1 and model.jnt_type[model.body("cube").jntadr] == mujoco.mjtJoint.mjJNT_FREE
    size = model.geom("cube").size
    assert np.allclose(size, size[0]) and 0.06 <= 2 * size[0] <= 0.07, "a 6-7 cm cube"


def test_20_actuators_four_through_the_j1_plus_j2_tendons(model) -> None:
    assert model.nu == 20
    tendon_driven = [
        model.actuator(i).name for i in range(model.nu) if model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_TENDON
    ]
    assert tendon_driven == ["A_FFJ0", "A_MFJ0", "A_RFJ0", "A_LFJ0"]
    driven_joints = {
        model.joint(model.actuator_trnid[i, 0]).name
        for i in range(model.nu)
        if model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
    }
    assert driven_joints == set(RANGES) - {f"{f}J{j}" for f in ("FF", "MF", "RF", "LF") for j in (1, 2)}


@pytest.mark.parametrize("finger", ["FF", "MF", "RF", "LF"])
def test_the_tendon_bends_the_middle_and_distal_joints_together(model, finger: str) -> None:
    data = _home(model)
    data.ctrl[model.actuator(f"A_{finger}J0").id] = 1.6
    for _ in range(int(1.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    j1, j2 = (float(data.joint(f"{finger}J{j}").qpos[0]) for j in (1, 2))
    assert j1 == pytest.approx(j2, abs=0.01)
    assert j1 + j2 == pytest.approx(1.6, abs=0.08)  # the position actuator's target for J0 = J1 + J2


def test_the_default_pose_touches_nothing_but_the_cube(model) -> None:
    data = _home(model)
    touching = {
        frozenset((model.body(model.geom_bodyid[c.geom1]).name, model.body(model.geom_bodyid[c.geom2]).name))
        for c in data.contact[: data.ncon]
    }
    assert all("cube" in pair for pair in touching), touching


def test_the_cube_rests_on_the_palm_for_2_s(model) -> None:
    data = _home(model)
    start, quat = data.body("cube").xpos.copy(), data.body("cube").xquat.copy()
    palm_top = data.site("palm_center").xpos[2]
    for _ in range(int(2.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        assert data.body("cube").xpos[2] > palm_top, "the cube fell"
    assert np.linalg.norm(data.body("cube").xpos - start) < 0.005
    assert abs(float(np.dot(quat, data.body("cube").xquat))) > math.cos(2 * DEG / 2), "it turned less than 2 degrees"
    assert np.abs(data.qvel).max() < 0.01, "everything at rest"
