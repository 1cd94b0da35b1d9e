"""The simulation layer against MuJoCo C (`mujoco.mj_step` / `mj_forward` on the same MJCF and state)."""

from __future__ import annotations

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import torch
import warp as wp

from phalanx.assets import asset_path
from phalanx.sim import SimCfg, Simulator, load_model


def test_cartpole_trajectories_match_mujoco_c() -> None:
    """16 worlds, random initial states and random forces, 100 steps: qpos/qvel agree with MuJoCo C."""
    n, steps = 16, 100
    sim = Simulator(load_model(asset_path("cartpole.xml")), n, "cpu", SimCfg(decimation=1))
    rng = np.random.default_rng(0)
    qpos0 = np.stack([rng.uniform(-1.0, 1.0, n), rng.uniform(-0.5, 0.5, n)], axis=1)
    qvel0 = rng.uniform(-0.5, 0.5, (n, 2))
    ctrl = rng.uniform(-40.0, 40.0, (steps, n, 1))
    sim.qpos[:] = torch.as_tensor(qpos0, dtype=torch.float32)
    sim.qvel[:] = torch.as_tensor(qvel0, dtype=torch.float32)

    mjm = load_model(asset_path("cartpole.xml"))
    datas = [mujoco.MjData(mjm) for _ in range(n)]
    for i, d in enumerate(datas):
        d.qpos[:], d.qvel[:] = sim.qpos[i].double().numpy(), sim.qvel[i].double().numpy()

    for t in range(steps):
        sim.ctrl[:] = torch.as_tensor(ctrl[t], dtype=torch.float32)
        sim.step()
        for i, d in enumerate(datas):
            d.ctrl[:] = ctrl[t, i]
            mujoco.mj_step(mjm, d)
    expected_qpos = np.stack([d.qpos for d in datas])
    expected_qvel = np.stack([d.qvel for d in datas])
    np.testing.assert_allclose(sim.qpos.numpy(), expected_qpos, atol=2e-3, rtol=1e-3)
    np.testing.assert_allclose(sim.qvel.numpy(), expected_qvel, atol=1e-2, rtol=1e-3)
    assert np.abs(expected_qpos - qpos0).max() > 0.5, "the trajectories must go somewhere"


@pytest.mark.parametrize(
    ("integrator", "limit", "flags"),
    [("Euler", "", ""), ("implicitfast", "", ""), ("implicitfast", 'range="-9 9"', 'constraint="disable"')],
)
def test_a_model_without_constraint_rows_moves_as_in_mujoco_c(integrator: str, limit: str, flags: str) -> None:
    """No joint limit and no contacts (or the constraint solver off): given no constraint rows,
    MuJoCo Warp would integrate nothing with these integrators; the simulator keeps one row."""
    xml = f"""<mujoco><option timestep="0.01" integrator="{integrator}"><flag contact="disable" {flags}/></option>
      <worldbody><body><joint name="slide" type="slide" axis="1 0 0" damping="0.5" {limit}/>
        <geom type="box" size=".1 .1 .1" mass="1"/>
        <body><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 .5" size=".02" mass=".1"/></body>
      </body></worldbody><actuator><motor joint="slide"/></actuator></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    sim = Simulator(mjm, 1, "cpu", SimCfg(decimation=1))
    d = mujoco.MjData(mjm)
    d.qpos[1] = 0.3
    sim.qpos[:] = torch.as_tensor(d.qpos, dtype=torch.float32)
    for _ in range(50):
        sim.ctrl[:] = 2.0
        sim.step()
        d.ctrl[:] = 2.0
        mujoco.mj_step(mjm, d)
    assert np.abs(d.qpos - [0.0, 0.3]).min() > 0.2, "the trajectory must go somewhere"
    np.testing.assert_allclose(sim.qpos[0].numpy(), d.qpos, atol=1e-3, rtol=1e-3)
    np.testing.assert_allclose(sim.qvel[0].numpy(), d.qvel, atol=1e-3, rtol=1e-3)


def _ant_states(mjm: mujoco.MjModel, n: int) -> list[mujoco.MjData]:
    """n ant states in contact: MuJoCo C rollouts from the home pose with random controls, each
    stopped at a random step after 40 where it touches the floor."""
    rng = np.random.default_rng(1)
    key = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_KEY, "home")
    states = []
    for _ in range(n):
        d = mujoco.MjData(mjm)
        mujoco.mj_resetDataKeyframe(mjm, d, key)
        d.qpos[7:] += rng.uniform(-0.2, 0.2, mjm.nq - 7)
        for t in range(1000):
            d.ctrl[:] = rng.uniform(-0.5, 0.5, mjm.nu)
            mujoco.mj_step(mjm, d)
            if t >= 40 + rng.integers(0, 40):
                mujoco.mj_forward(mjm, d)  # contacts of the state reached, not of the step's start
                if d.ncon >= 2:
                    break
        mujoco.mj_rnePostConstraint(mjm, d)
        states.append(d)
    return states


def _ant_xml(cone: str) -> str:
    xml = open(asset_path("ant.xml")).read()
    assert 'cone="elliptic"' in xml
    return xml.replace('cone="elliptic"', f'cone="{cone}"')


@pytest.mark.parametrize(
    "cone",
    [
        "elliptic",
        pytest.param(
            "pyramidal",
            marks=pytest.mark.xfail(
                strict=True,
                reason="MuJoCo Warp 4.0.0 vs MuJoCo C 4.0.0: pyramidal condim-3 contacts give accelerations "
                "up to ~20 % apart (frictionless and elliptic contacts agree); phalanx's assets use elliptic",
            ),
        ),
    ],
)
def test_ant_accelerations_and_contact_forces_match_mujoco_c(cone: str) -> None:
    """On 16 random contact states: accelerations, constraint forces and per-body contact wrenches."""
    mjm = load_model(_ant_xml(cone))
    n = 16
    states = _ant_states(mjm, n)
    assert all(d.ncon >= 2 for d in states), "the states must be in contact"
    sim = Simulator(load_model(_ant_xml(cone)), n, "cpu", SimCfg(decimation=1, body_forces=True))
    for field in ("qpos", "qvel", "ctrl", "qacc_warmstart"):
        getattr(sim, field)[:] = torch.as_tensor(np.stack([getattr(d, field) for d in states]), dtype=torch.float32)
    sim.qacc.fill_(float("nan"))  # poison: every entry must be written
    sim.cfrc_ext.fill_(float("nan"))
    with wp.ScopedDevice("cpu"):
        mjw.forward(sim.model, sim.data)
        mjw.rne_postconstraint(sim.model, sim.data)

    qacc = np.stack([d.qacc for d in states])
    scale = np.abs(qacc).max()
    np.testing.assert_allclose(sim.qacc.numpy(), qacc, atol=2e-3 * scale, rtol=2e-3)
    qfrc_constraint = np.stack([d.qfrc_constraint for d in states])
    np.testing.assert_allclose(
        sim.qfrc_constraint.numpy(), qfrc_constraint, atol=2e-3 * np.abs(qfrc_constraint).max(), rtol=2e-3
    )
    cfrc_ext = np.stack([d.cfrc_ext for d in states])  # (n, nbody, 6): contact wrench on each body
    np.testing.assert_allclose(sim.cfrc_ext.numpy(), cfrc_ext, atol=2e-3 * np.abs(cfrc_ext).max(), rtol=2e-3)


@pytest.mark.parametrize("asset", ["cartpole.xml", "ant.xml", "humanoid.xml", "anymal.xml"])
def test_buffer_sizes_bound_the_model(asset: str) -> None:
    """Default buffers hold every contact the model can make: the pair bound, rounded up."""
    mjm = load_model(asset_path(asset))
    sim = Simulator(mjm, 2, "cpu", SimCfg())
    # contacts: ant sphere 1 + 12 capsules * 2 = 25 -> 28; humanoid 3 spheres + 16 capsules * 2 = 35 -> 36.
    # rows: elliptic condim 3 -> 3 per contact, plus one per limited joint: cartpole 1 (slider) -> 4;
    # ant 28 * 3 + 8 = 92; humanoid 36 * 3 + 21 = 129 -> 132.
    # anymal: 4 feet spheres 1 + 12 capsules * 2 + base box 4 = 32; 32 * 3 + 12 limited joints = 108.
    expected = {"cartpole.xml": (0, 4), "ant.xml": (28, 92), "humanoid.xml": (36, 132), "anymal.xml": (32, 108)}
    expected = expected[asset]
    assert (sim.nconmax, sim.njmax) == expected
