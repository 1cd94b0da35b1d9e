"""A torque-controlled ANYmal in MuJoCo C for the legged controllers' closed-loop checks: the model,
its standing pose, its legs and its state as `QuadrupedController` reads them, and the heuristic
high level's walk over the controller (tests/control/test_legged_control.py, tools/swing_rocking.py)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import torch

from phalanx.assets import asset_path
from phalanx.control.body import BodyCfg
from phalanx.control.heuristic import HeuristicCfg, heuristic_command
from phalanx.control.mpc import MPCCfg
from phalanx.control.quadruped import QuadrupedCfg, QuadrupedController, QuadrupedState
from phalanx.sim.actuators import ActuatorCfg, apply_actuators
from phalanx.tasks.anymal.mdp.quadruped_control import standing_body

FEET = ("LF", "RF", "LH", "RH")


def anymal_with_motors() -> mujoco.MjModel:
    """ANYmal with torque actuators in place of its position actuators: torque = ctrl (N m),
    within +-80 (`ActuatorCfg` kind "torque", as a task would ask for them)."""
    spec = mujoco.MjSpec.from_file(str(asset_path("anymal.xml")))
    apply_actuators(spec, [ActuatorCfg(".*", kind="torque", effort_limit=80.0)])
    return spec.compile()


def standing(model: mujoco.MjModel) -> mujoco.MjData:
    """The home pose with the feet just on the floor."""
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    sites = [model.site(f"{foot}_foot").id for foot in FEET]
    radius = model.geom("LF_foot").size[0]
    data.qpos[2] -= data.site_xpos[sites, 2].min() - radius
    mujoco.mj_forward(model, data)
    return data


def legs(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(1, 4, 3, 3) anchors and axes of each leg's joints, (1, 4, 3) feet, world."""
    joints = [[model.joint(f"{foot}_{j}").id for j in ("HAA", "HFE", "KFE")] for foot in FEET]
    sites = [model.site(f"{foot}_foot").id for foot in FEET]

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(a), dtype=torch.float32)[None]

    return t(data.xanchor[joints]), t(data.xaxis[joints]), t(data.site_xpos[sites])


def body_cfg(model: mujoco.MjModel) -> BodyCfg:
    """The whole robot's mass, and its inertia about the center of mass in the home pose."""
    return standing_body(model, "base", [f"{foot}_foot" for foot in FEET])[0]


def controller_state(model: mujoco.MjModel, data: mujoco.MjData) -> QuadrupedState:
    """What the quadruped controller reads, from MuJoCo's data (one robot): a foot touches the
    floor with its centre within 2 cm of where it stands on it (as anymal-qp's env sees it)."""
    anchors, axes, feet = legs(model, data)
    rotation = torch.tensor(data.xmat[1].reshape(3, 3), dtype=torch.float32)[None]
    omega = rotation @ torch.tensor(data.qvel[3:6], dtype=torch.float32)[None, :, None]  # base frame -> world
    velocity = torch.zeros(1, 4, 3)
    for leg, foot in enumerate(FEET):
        v = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, model.site(f"{foot}_foot").id, v, 0)
        velocity[0, leg] = torch.tensor(v[3:], dtype=torch.float32)
    com = torch.tensor(data.subtree_com[1], dtype=torch.float32)[None]
    com_velocity = torch.tensor(data.qvel[:3], dtype=torch.float32)[None]  # the base's: close enough
    radius = float(model.site_size[model.site(f"{FEET[0]}_foot").id, 0])
    contact = feet[..., 2] < radius + 0.02
    return QuadrupedState(rotation, omega.squeeze(-1), com, com_velocity, feet, velocity, anchors, axes, contact)


def walk(
    seconds: float, velocity: tuple[float, float], mpc: MPCCfg | None = None, **swing: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The heuristic high level over `QuadrupedController` in MuJoCo C, commanded to move at
    `velocity` (m/s, world) facing +x, the forces from the force QP (or from `mpc`); `swing`:
    QuadrupedCfg's swing gains (swing_kp, swing_kd) where not its defaults. Returns the base's
    positions (T, 3), tilts (T,) (rad) and larger of its roll and pitch rates (T,) (rad/s)
    (tools/swing_rocking.py walks it too)."""
    model = anymal_with_motors()
    data = standing(model)
    dt = model.opt.timestep
    controller = QuadrupedController(QuadrupedCfg(body_cfg(model), mpc=mpc, **swing), 1, 4)
    ground = float(legs(model, data)[2][0, 0, 2])  # the feet's centres on the floor
    cfg = HeuristicCfg(height=float(data.subtree_com[1][2]) - ground)
    thighs = [model.body(f"{foot}_THIGH").id for foot in FEET]
    positions, tilts, rocking = [], [], []
    for _ in range(round(seconds / dt)):
        state = controller_state(model, data)
        rocking.append(state.angular_velocity[0, :2].abs().max().item())
        hips = torch.tensor(data.xpos[thighs], dtype=torch.float32)[None]
        command = heuristic_command(
            cfg, controller.clock, state.com, state.com_velocity, hips, torch.tensor([velocity]), torch.zeros(1), ground
        )
        if mpc is not None:  # the MPC tracks the heuristic's reference: no acceleration of its own
            command.com_acceleration = torch.zeros(1, 3)
        data.ctrl[:] = controller.step(state, command, dt).torques[0].numpy()
        mujoco.mj_step(model, data)
        positions.append(data.qpos[:3].copy())
        tilts.append(math.acos(min(1.0, data.xmat[1][8])))
    return np.array(positions), np.array(tilts), np.array(rocking)
