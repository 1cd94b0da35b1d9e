"""A quadruped's actions through the two-level controller of `phalanx.control` (Da and Xie): the
heuristic high level (fixed trot, Raibert footholds, a center-of-mass acceleration that follows
the velocity command) plus the policy's corrections to each of its outputs, then the QP body
controller and swing legs turn them into joint torques at every physics step. With zero
actions the robot walks as the heuristic controller alone (the baseline)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from phalanx.control.body import BodyCfg, check_qp_solver, yaw_rotation
from phalanx.control.footholds import FootholdSearchCfg, safe_footholds
from phalanx.control.heuristic import HeuristicCfg, heuristic_command
from phalanx.control.legs import leg_jacobians
from phalanx.control.mpc import MPCCfg
from phalanx.control.qp import QPSettings, check_backend, check_block_dim
from phalanx.control.quadruped import QuadrupedCfg, QuadrupedCommand, QuadrupedController, QuadrupedState
from phalanx.control.swing import swing_clearance
from phalanx.core.errors import ConfigError, check_choice, check_positive, check_range
from phalanx.envs.cfg import ActionController

BODY_CONTROLLERS = ("qp", "mpc")
"""Where the standing feet's forces come from (`quadruped_control`'s `body_controller`)."""

if TYPE_CHECKING:
    import mujoco

    from phalanx.envs.task_env import TaskEnv


def standing_body(mjm: mujoco.MjModel, root: str, feet: list[str]) -> tuple[BodyCfg, float]:
    """The body controller's model of a robot standing in its home pose (keyframe "home", else
    qpos0) with its lowest foot site on z = 0: the whole robot's mass and its principal moments of
    inertia about the center of mass in the base's frame (diagonal of the composite inertia), and
    the center of mass's height above the feet's sites (m)."""
    import mujoco  # MuJoCo only once a task builds the controller: `phalanx list` loads none

    data = mujoco.MjData(mjm)
    key = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_KEY, "home")
    if key >= 0:
        mujoco.mj_resetDataKeyframe(mjm, data, key)
    mujoco.mj_forward(mjm, data)
    body = mjm.body(root).id
    com = data.subtree_com[body]
    inertia = np.zeros((3, 3))
    for b in range(1, mjm.nbody):
        r = data.xipos[b] - com
        rot = data.ximat[b].reshape(3, 3)
        inertia += rot @ np.diag(mjm.body_inertia[b]) @ rot.T + mjm.body_mass[b] * (r @ r * np.eye(3) - np.outer(r, r))
    base = data.xmat[body].reshape(3, 3)
    inertia = base.T @ inertia @ base
    height = float(com[2] - min(data.site_xpos[mjm.site(f).id, 2] for f in feet))
    cfg = BodyCfg(mass=float(mjm.body_subtreemass[body]), inertia=tuple(float(v) for v in np.diag(inertia)))
    return cfg, height


def quadruped_state(
    rotation: torch.Tensor,
    base: torch.Tensor,
    base_velocity: torch.Tensor,
    com: torch.Tensor,
    anchors: torch.Tensor,
    axes: torch.Tensor,
    leg_velocities: torch.Tensor,
    feet: torch.Tensor,
    ground: torch.Tensor,
    contact_height: float,
) -> QuadrupedState:
    """What the quadruped controller reads of B robots, from their simulator's state: the base's
    orientation `rotation` (B, 3, 3) and position `base` (B, 3), its free joint's velocity
    `base_velocity` (B, 6: linear in world axes, angular in the base's, as MuJoCo's qvel), the
    center of mass `com` (B, 3), the legs' joint positions `anchors` and unit `axes` (B, k, j, 3),
    their joint velocities `leg_velocities` (B, k, j), the feet's positions `feet` (B, k, 3), and
    the height a foot's centre has standing on the ground under it, `ground` (B, k): a foot less
    than `contact_height` above it touches."""
    omega = (rotation @ base_velocity[:, 3:6, None]).squeeze(-1)  # base frame -> world
    # A foot's velocity: the base's motion at the foot, plus its own leg's joints'.
    lever = feet - base[:, None]
    legs = (leg_jacobians(anchors, axes, feet) @ leg_velocities[..., None]).squeeze(-1)
    com_velocity = base_velocity[:, :3]  # the base's: close enough
    velocity = com_velocity[:, None] + torch.linalg.cross(omega[:, None].expand_as(lever), lever, dim=-1)
    contact = feet[..., 2] - ground < contact_height
    return QuadrupedState(rotation, omega, com, com_velocity, feet, velocity + legs, anchors, axes, contact)


Surface = Callable[[torch.Tensor], torch.Tensor]
"""The ground's height (m) at world points (..., 2)."""


def foot_ground(xy: torch.Tensor, surface: Surface | None, radius: float) -> torch.Tensor:
    """(...) the height (m) a foot's centre, a sphere of `radius`, has standing at the points `xy`
    (..., 2) on `surface` (None: flat ground at 0)."""
    return torch.full_like(xy[..., 0], radius) if surface is None else surface(xy) + radius


def footholds_over(
    xy: torch.Tensor, liftoff: torch.Tensor, surface: Surface | None, radius: float,
    search: FootholdSearchCfg | None, clearance: float, lift: float,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The high level's footholds (B, k, 3) and the swings' lift (B, k) over `surface`: the
    footholds asked for at `xy` (B, k, 2), each moved to safe ground by `search` (None: as asked),
    at the height a foot's centre has standing there; each swing from `liftoff` (B, k, 3) lifted
    over the ground on its way, then `clearance` m higher (0: `lift` m), and at least `lift` m. On
    flat ground (`surface` None) the footholds stay as asked and every lift is `lift`."""
    if search is not None and surface is not None:
        xy = safe_footholds(xy, surface, search)
    footholds = torch.cat((xy, foot_ground(xy, surface, radius)[..., None]), dim=-1)
    if clearance > 0 and surface is not None:
        over = swing_clearance(liftoff, footholds, lambda p: foot_ground(p, surface, radius), clearance)
        return footholds, over.clamp(min=lift)
    return footholds, torch.full_like(xy[..., 0], lift)


class quadruped_control(ActionController):  # noqa: N801 (terms are named like functions)
    """The policy's actions correct the heuristic high level's command, which the `QuadrupedController`
    turns into the legs' torques every control step. In order, one unit being each part's `*_scale`:
    the center of mass's acceleration (m/s^2) and the base's angular acceleration (rad/s^2), both in
    the base's yaw frame; the gait frequency (Hz); each foot's foothold (x, y in the yaw frame, m, in
    the order of `legs`); the swings' lift (m). The heuristic follows the velocity command `command`.

    Leg L's joints are "{L}_{joint}" for `joints` (hip to foot), its foot the site `foot.format(leg=L)`
    (a sphere), its hip the body `hip.format(leg=L)`. `foothold_reach`, `swing_clearance` (m, 0: off)
    move footholds to safe ground and lift swings over it. `body_controller` ("qp" or "mpc") picks
    where stance forces come from, `qp_*` how the QP is solved (`BodyCfg.qp_solver`, `QPSettings`)."""

    def __init__(
        self,
        env: TaskEnv,
        command: str = "base_velocity",
        legs: tuple[str, ...] = ("LF", "RF", "LH", "RH"),
        joints: tuple[str, ...] = ("HAA", "HFE", "KFE"),
        foot: str = "{leg}_foot",
        hip: str = "{leg}_THIGH",
        root: str = "base",
        frequency: float = 2.0,
        acceleration_scale: float = 2.0,
        angular_scale: float = 4.0,
        frequency_scale: float = 0.5,
        foothold_scale: float = 0.1,
        swing_height_scale: float = 0.05,
        qp_solver: str = "device",
        qp_backend: str = "auto",
        qp_block_dim: int = QPSettings.block_dim,
        body_controller: str = "qp",
        contact_height: float = 0.02,
        foothold_reach: float = 0.0,
        swing_clearance: float = 0.0,
        swing_kp: float = QuadrupedCfg.swing_kp,
        swing_kd: float = QuadrupedCfg.swing_kd,
    ):
        check_choice("env.actions.controller.params.body_controller", body_controller, BODY_CONTROLLERS)
        check_qp_solver(qp_solver, "env.actions.controller.params.qp_solver")
        check_backend(qp_backend, "env.actions.controller.params.qp_backend")
        check_block_dim(qp_block_dim, "env.actions.controller.params.qp_block_dim")
        check_positive("env.actions.controller.params.contact_height", contact_height, " m")
        self.contact_height = contact_height  # m: a standing foot takes force once its centre is this near the ground
        spacing = FootholdSearchCfg.spacing
        if foothold_reach != 0 and not foothold_reach >= spacing:
            raise ConfigError(
                f"must be 0 (footholds as asked) or at least the search's spacing, {spacing} m; got {foothold_reach}",
                "env.actions.controller.params.foothold_reach",
            )
        self.search = FootholdSearchCfg(reach=foothold_reach) if foothold_reach else None
        check_range("env.actions.controller.params.swing_clearance", swing_clearance, low=0.0)
        self.swing_clearance = swing_clearance
        check_positive("env.actions.controller.params.swing_kp", swing_kp, " N/m")
        check_range("env.actions.controller.params.swing_kd", swing_kd, low=0.0)
        if qp_solver == "host" and env.capture:
            raise ConfigError(
                "'host' solves the QP on the CPU inside the env step, which a captured CUDA graph cannot run: "
                "build the env with capture=False",
                "env.actions.controller.params.qp_solver",
            )
        sim = env.sim
        if sim.root_dofadr is None:
            raise ConfigError(f"task {env.cfg.name!r}: the quadruped controller needs a free-floating base")
        names = [f"{leg}_{joint}" for leg in legs for joint in joints]
        missing = [n for n in names if n not in sim.joint_names]
        if missing:
            raise ConfigError(f"joints {missing} not in the model", "env.actions.controller.params.joints")
        joint_ids = [sim.joint_names.index(n) for n in names]
        self.actuator_ids = torch.tensor(self.actuators_of(sim, joint_ids), dtype=torch.long, device=env.device)
        mj_joints = [sim.mjm.joint(n).id for n in names]
        self._joint_ids = torch.tensor(mj_joints, dtype=torch.long, device=env.device).view(len(legs), len(joints))
        self._dofs = sim.joint_dofadr[torch.tensor(joint_ids, device=env.device)].view(len(legs), len(joints))
        feet = [foot.format(leg=leg) for leg in legs]
        self._feet = sim.site_ids(feet)
        self._hips = sim.body_ids([hip.format(leg=leg) for leg in legs])
        self._root = int(sim.body_ids([root])[0])
        self.radius = float(sim.mjm.site_size[int(self._feet[0]), 0])
        body, height = standing_body(sim.mjm, root, feet)
        qp = dataclasses.replace(body.qp, backend=qp_backend, block_dim=qp_block_dim)
        body = dataclasses.replace(body, qp_solver=qp_solver, qp=qp)
        mpc = MPCCfg() if body_controller == "mpc" else None
        cfg = QuadrupedCfg(body, mpc=mpc, swing_kp=swing_kp, swing_kd=swing_kd)
        self.controller = QuadrupedController(cfg, env.num_envs, len(legs), env.device)
        self.heuristic = HeuristicCfg(height=height, frequency=frequency)
        self.command = command
        self.command_layout = [
            ("com_acceleration", 3, acceleration_scale),
            ("angular_acceleration", 3, angular_scale),
            ("frequency", 1, frequency_scale),
            ("footholds", 2 * len(legs), foothold_scale),
            ("swing_height", 1, swing_height_scale),
        ]
        self.scales = torch.tensor(
            [scale for _, width, scale in self.command_layout for _ in range(width)], device=env.device
        )
        self.dt = sim.dt * sim.cfg.decimation
        self.infeasible = torch.zeros(env.num_envs, device=env.device)
        """(num_envs,) share of the last env step's control steps whose force QP was infeasible."""
        env.command(command)  # names the command or raises
        self._sim = sim
        sim.add_step_work(self._kinematics)

    def _kinematics(self) -> None:
        """Poses and subtree centers of mass from the current qpos (Warp work, `Simulator.launch`)."""
        import mujoco_warp as mjw

        mjw.kinematics(self._sim.model, self._sim.data)
        mjw.com_pos(self._sim.model, self._sim.data)

    def drive(self, env: TaskEnv, command: torch.Tensor) -> None:
        sim = env.sim
        sim.launch(self._kinematics)  # once per env step (after resets); later control steps read MuJoCo's poses
        correction = self.scales * command
        decimation = env.cfg.actions.controller.decimation
        self.infeasible.zero_()
        for _ in range(decimation):
            robot, ground = self._state(env)
            out = self.controller.step(robot, self._command(env, robot, ground, correction), self.dt)
            sim.ctrl[:, self.actuator_ids] = out.torques
            self.infeasible += out.qp.primal_infeasible.float() / decimation
            sim.step()

    def _state(self, env: TaskEnv) -> tuple[QuadrupedState, torch.Tensor]:
        """The robots' state, and the height (B, k) their feet's centres have standing on the ground
        under them (contact and the heuristic's floor both read it)."""
        sim = env.sim
        d = sim.root_dofadr
        feet = sim.site_xpos[:, self._feet]
        ground = self._ground(env, feet[..., :2])
        state = quadruped_state(
            sim.xmat[:, self._root], sim.xpos[:, self._root], sim.qvel[:, d : d + 6], sim.subtree_com[:, self._root],
            sim.xanchor[:, self._joint_ids], sim.xaxis[:, self._joint_ids], sim.qvel[:, self._dofs], feet, ground,
            self.contact_height,
        )  # fmt: skip
        return state, ground

    def _command(
        self, env: TaskEnv, robot: QuadrupedState, ground: torch.Tensor, correction: torch.Tensor
    ) -> QuadrupedCommand:
        sim = env.sim
        yaw = torch.atan2(robot.rotation[:, 1, 0], robot.rotation[:, 0, 0])
        heading = yaw_rotation(yaw)  # (B, 3, 3) base yaw frame -> world
        asked = env.command(self.command)  # (B, 3) forward, lateral (m/s), yaw rate (rad/s)
        velocity = (heading[:, :2, :2] @ asked[:, :2, None]).squeeze(-1)
        out = heuristic_command(
            self.heuristic, self.controller.clock, robot.com, robot.com_velocity,
            sim.xpos[:, self._hips], velocity, yaw, ground,
        )  # fmt: skip
        turn = torch.cat((torch.zeros_like(asked[:, :2]), asked[:, 2:]), dim=-1) * self.controller.cfg.attitude_kd
        c = correction
        asked_acceleration = (heading @ c[:, 0:3, None]).squeeze(-1)
        if self.controller.mpc is not None:  # it tracks the reference itself: the policy's acceleration bends it
            # (the angular correction below then goes unused)
            out.com_acceleration, out.yaw_rate = asked_acceleration, asked[:, 2]
        else:
            out.com_acceleration = out.com_acceleration + asked_acceleration
        out.angular_acceleration = turn + (heading @ c[:, 3:6, None]).squeeze(-1)
        out.frequency = out.frequency + c[:, 6]  # the gait clock's; the footholds assume the fixed `frequency`
        k = robot.feet.shape[1]
        shift = heading[:, None, :2, :2] @ c[:, 7 : 7 + 2 * k].view(-1, k, 2, 1)
        xy = out.footholds[..., :2] + shift.squeeze(-1)
        out.footholds, lift = footholds_over(
            xy, self.controller.liftoff, self._surface(env), self.radius, self.search, self.swing_clearance,
            self.controller.cfg.swing_height,
        )  # fmt: skip
        out.swing_height = lift + c[:, 7 + 2 * k, None]
        return out

    def _ground(self, env: TaskEnv, xy: torch.Tensor) -> torch.Tensor:
        """(B, k) the height (m) a foot's centre has standing at the points `xy` (B, k, 2)."""
        return foot_ground(xy, self._surface(env), self.radius)

    @staticmethod
    def _surface(env: TaskEnv) -> Surface | None:
        return None if env.terrain is None else env.terrain.height_at

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.controller.reset(mask)
        self.infeasible.masked_fill_(mask, 0.0)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.controller.state_dict() | {"infeasible": self.infeasible.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.controller.load_state_dict(state)
        self.infeasible.copy_(state["infeasible"])


def gait_phase(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 2) sine and cosine of the quadruped controller's gait phase."""
    phase = 2 * math.pi * _controller(env).controller.clock.phase
    return torch.stack((phase.sin(), phase.cos()), dim=-1)


def qp_infeasible(env: TaskEnv) -> torch.Tensor:
    """(num_envs,) share of the env step's control steps whose force QP was infeasible (metric)."""
    return _controller(env).infeasible


def _controller(env: TaskEnv) -> quadruped_control:
    if not isinstance(env.low_level, quadruped_control):
        raise ConfigError(f"task {env.cfg.name!r}: its actions do not drive quadruped_control", "env.actions")
    return env.low_level
