"""Body, site and sensor observation terms on a fixed-base arm, against MuJoCo C's forward pass."""

from __future__ import annotations

from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import torch

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ObsTermCfg, RewardTermCfg, TaskCfg
from phalanx.envs.mdp import bodies, observations, rewards
from phalanx.sim import SimCfg, Simulator, load_model

# A 2-link arm on a base that is shifted and turned 30 degrees about z, so base frame != world frame.
ARM = """<mujoco>
  <worldbody>
    <body name="base" pos=".3 -.2 .5" euler="0 0 30">
      <geom type="cylinder" size=".05 .05" contype="0" conaffinity="0"/>
      <body name="upper" pos="0 0 .1">
        <joint name="shoulder" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .4 0 0" size=".03" contype="0" conaffinity="0"/>
        <body name="lower" pos=".4 0 0">
          <joint name="elbow" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="0" conaffinity="0"/>
          <site name="tip" pos=".3 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <sensor>
    <jointpos name="elbow_pos" joint="elbow"/>
    <framepos name="tip_pos" objtype="site" objname="tip"/>
    <framequat name="tip_quat" objtype="site" objname="tip"/>
  </sensor>
</mujoco>"""

QPOS = [[0.4, -0.7], [-1.0, 0.9]]
QVEL = [[0.5, -1.0], [2.0, 0.3]]


@pytest.fixture(scope="module")
def stepped():
    """A stand-in env (terms read only `env.sim`) stepped once from QPOS, QVEL, and MuJoCo C's
    forward pass on the same states: the derived quantities a step leaves are from its start."""
    sim = Simulator(load_model(ARM), num_envs=2, device="cpu", cfg=SimCfg(decimation=1))
    sim.qpos[:] = torch.tensor(QPOS)
    sim.qvel[:] = torch.tensor(QVEL)
    # Poisoned: the step must write every entry read below (the world body's, row 0, it never rewrites).
    for derived in (sim.xpos, sim.xquat, sim.xmat, sim.subtree_com, sim.cvel):
        derived[:, 1:] = float("nan")
    for derived in (sim.site_xpos, sim.sensordata):
        derived.fill_(float("nan"))
    sim.step()
    mjm = load_model(ARM)
    datas = []
    for qpos, qvel in zip(QPOS, QVEL, strict=True):
        data = mujoco.MjData(mjm)
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(mjm, data)
        datas.append(data)
    return SimpleNamespace(sim=sim, num_envs=2, device=sim.device), mjm, datas


def test_site_position_in_world_and_base_frame(stepped) -> None:
    env, mjm, datas = stepped
    base = mjm.body("base").id
    world = np.stack([d.site_xpos[0] for d in datas])
    in_base = np.stack([d.xmat[base].reshape(3, 3).T @ (d.site_xpos[0] - d.xpos[base]) for d in datas])
    np.testing.assert_allclose(bodies.site_pos_w(env, sites=["tip"])(env).numpy(), world, atol=1e-5)
    # The default base of a fixed-base model is the first body under the world: "base".
    np.testing.assert_allclose(bodies.site_pos_b(env, sites=["tip"])(env).numpy(), in_base, atol=1e-5)
    upper = mjm.body("upper").id
    in_upper = np.stack([d.xmat[upper].reshape(3, 3).T @ (d.site_xpos[0] - d.xpos[upper]) for d in datas])
    np.testing.assert_allclose(bodies.site_pos_b(env, sites=["tip"], base="upper")(env).numpy(), in_upper, atol=1e-5)


def test_body_pose_and_velocity_in_world_frame(stepped) -> None:
    env, mjm, datas = stepped
    ids = [mjm.body("upper").id, mjm.body("lower").id]
    names = ["upper", "lower"]
    pos = np.stack([d.xpos[ids].ravel() for d in datas])
    quat = np.stack([d.xquat[ids].ravel() for d in datas])
    np.testing.assert_allclose(bodies.body_pos_w(env, bodies=names)(env).numpy(), pos, atol=1e-5)
    np.testing.assert_allclose(bodies.body_quat_w(env, bodies=names)(env).numpy(), quat, atol=1e-5)
    velocity = np.zeros((2, 2, 6))  # (env, body, [angular, linear]) at the body frame's origin, world frame
    for d, v in zip(datas, velocity, strict=True):
        for i, body in enumerate(ids):
            mujoco.mj_objectVelocity(mjm, d, mujoco.mjtObj.mjOBJ_XBODY, body, v[i], 0)  # XBODY: at xpos
    assert np.linalg.norm(velocity[:, 1, 3:], axis=1).min() > 0.1, "the lower link must move"
    lin, ang = velocity[..., 3:].reshape(2, 6), velocity[..., :3].reshape(2, 6)
    np.testing.assert_allclose(bodies.body_lin_vel_w(env, bodies=names)(env).numpy(), lin, atol=1e-5)
    np.testing.assert_allclose(bodies.body_ang_vel_w(env, bodies=names)(env).numpy(), ang, atol=1e-5)


def test_sensors_of_any_dimension_in_the_order_given(stepped) -> None:
    env, mjm, datas = stepped
    names = ["tip_quat", "elbow_pos", "tip_pos"]  # 4 + 1 + 3 columns
    expected = np.stack([np.concatenate([d.sensor(n).data for n in names]) for d in datas])
    value = bodies.sensor(env, sensors=names)(env)
    assert value.shape == (2, 8)
    np.testing.assert_allclose(value.numpy(), expected, atol=1e-5)


def test_the_default_base_of_a_floating_robot_is_its_free_root_body() -> None:
    mjm = load_model(
        """<mujoco><worldbody>
          <body name="pedestal"><geom size=".1"/></body>
          <body name="torso" pos="0 0 1"><freejoint/><geom size=".1"/></body>
        </worldbody></mujoco>"""
    )
    sim = SimpleNamespace(mjm=mjm, root_dofadr=0)  # what base_body_id reads of a Simulator
    assert bodies.base_body_id(sim) == mjm.body("torso").id


@pytest.mark.parametrize(
    ("term", "params", "says"),
    [
        (bodies.site_pos_w, {"sites": ["tip", "wrist"]}, r"sites \['wrist'\] not in the model; it has \['tip'\]"),
        (bodies.site_pos_b, {"sites": ["tip"], "base": "pedestal"}, r"bodies \['pedestal'\] not in the model"),
        (bodies.body_pos_w, {"bodies": ["hand"]}, r"bodies \['hand'\] not in the model; it has \['world', 'base'"),
        (bodies.sensor, {"sensors": ["force"]}, r"sensors \['force'\] not in the model; it has \['elbow_pos'"),
        (bodies.site_distance, {"site": "tip", "to_site": "wrist"}, r"sites \['wrist'\] not in the model; it has"),
    ],
)
def test_unknown_names_raise_with_the_models_names(stepped, term, params, says: str) -> None:
    env, _, _ = stepped
    with pytest.raises(ValueError, match=says):
        term(env, **params)


def _arm_task(observations: dict) -> TaskCfg:
    return TaskCfg(
        model=ARM.replace(
            "<mujoco>", "<mujoco><actuator><motor joint='shoulder'/><motor joint='elbow'/></actuator>", 1
        ),
        episode_length_s=1.0,
        observations={"policy": observations},
        rewards={"alive": RewardTermCfg(func=rewards.is_alive, weight=1.0)},
    )


def test_fixed_base_task_runs_with_body_terms_and_refuses_root_terms_by_name() -> None:
    tip = {"tip": ObsTermCfg(func=bodies.site_pos_b, params={"sites": ["tip"]})}
    env = make_cpu(_arm_task(tip), num_envs=2)
    obs, *_ = env.step(torch.zeros(2, env.action_dim))
    assert obs["policy"].shape == (2, 3) and torch.isfinite(obs["policy"]).all()
    with pytest.raises(ConfigError, match=r"env\.observations\.policy\.base_lin_vel: .*free-floating base"):
        make_cpu(_arm_task(tip | {"base_lin_vel": ObsTermCfg(func=observations.root_lin_vel_b)}), num_envs=2)
