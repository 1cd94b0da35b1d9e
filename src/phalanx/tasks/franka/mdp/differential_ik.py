"""An arm's actions as end-effector pose deltas (Isaac Lab's differential IK action): once per env
step, MuJoCo Warp's Jacobian of the end-effector site, then damped least squares on the GPU for
the joint step that moves the site by the commanded delta, and the arm's position actuators
aimed at the current joint positions plus that step (within the joint ranges). (A gripper is
`ActionCfg.gripper`, one more action beside the controller's command.)"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import torch

from phalanx.control.qp import spd_inverse
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ActionController

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def damped_least_squares(jacobian: torch.Tensor, error: torch.Tensor, damping: float) -> torch.Tensor:
    """(B, n) the joint step dq = J' (J J' + damping^2 I)^-1 e for Jacobians (B, k, n) and task
    errors (B, k): the least-squares step toward e, shortened where J is near singular, and a
    bounded step toward targets out of reach (Buss 2004). Graph-safe (no host reads)."""
    jjt = jacobian @ jacobian.mT
    eye = torch.eye(jjt.shape[-1], dtype=jjt.dtype, device=jjt.device)
    solved = spd_inverse(jjt + damping**2 * eye) @ error[..., None]
    return (jacobian.mT @ solved).squeeze(-1)


class differential_ik(ActionController):  # noqa: N801 (terms are named like functions)
    """The env's actions move the site `site` by a pose delta, in the frame of the body `base`:
    3 of position (`position_scale` m per unit) and 3 of rotation (a rotation vector,
    `rotation_scale` rad per unit).

    The arm is the joints matching the regular expression `joints` (hinges or slides, each with a
    position actuator). Once per env step the poses and MuJoCo Warp's Jacobian of the site are
    recomputed from the current state; the joint step from `damped_least_squares` (damping
    `damping`) is added to the current joint positions, clamped to the joint ranges, and held as
    the actuators' targets over the env step's control steps."""

    def __init__(
        self,
        env: TaskEnv,
        joints: str = "panda_joint[1-7]",
        site: str = "ee",
        base: str = "panda_link0",
        position_scale: float = 0.05,
        rotation_scale: float = 0.1,
        damping: float = 0.05,
    ):
        import mujoco_warp as mjw  # MuJoCo Warp only once a task builds the controller
        import warp as wp

        sim = env.sim
        field = "env.actions.controller.params"
        arm = [j for j, name in enumerate(sim.joint_names) if re.fullmatch(joints, name)]
        if not arm:
            raise ConfigError(f"matches no hinge or slide joint of {sim.joint_names}", f"{field}.joints")
        ids = self.actuators_of(sim, arm)
        if site not in sim.site_names:
            raise ConfigError(f"{site!r} is not a site of the model", f"{field}.site")
        if base not in sim.body_names:
            raise ConfigError(f"{base!r} is not a body of the model", f"{field}.base")
        self._joints = torch.tensor(arm, dtype=torch.long, device=env.device)
        self._qpos = sim.joint_qposadr[self._joints]
        self._dofs = sim.joint_dofadr[self._joints]
        self._range = sim.joint_range[self._joints]
        self.command_layout = [("position", 3, position_scale), ("rotation", 3, rotation_scale)]
        self.actuator_ids = torch.tensor(ids, dtype=torch.long, device=env.device)
        self.scales = torch.tensor([position_scale] * 3 + [rotation_scale] * 3, device=env.device)
        self.damping = damping
        self._site = sim.site_names.index(site)
        self._base = sim.body_names.index(base)
        body = int(sim.mjm.site_bodyid[self._site])
        nv, n = sim.mjm.nv, env.num_envs
        with wp.ScopedDevice(sim.wp_device):
            self._point = wp.zeros(n, dtype=wp.vec3)
            self._body = wp.full(n, body, dtype=int)
            self._jacp, self._jacr = wp.zeros((n, 3, nv)), wp.zeros((n, 3, nv))
        self._point_t = wp.to_torch(self._point)  # (n, 3) view
        self._jacp_t, self._jacr_t = wp.to_torch(self._jacp), wp.to_torch(self._jacr)  # (n, 3, nv) views
        self._sim, self._mjw = sim, mjw
        sim.add_step_work(self._poses)
        sim.add_step_work(self._site_jacobian)

    def _poses(self) -> None:
        """Poses, subtree centers of mass and motion subspaces from the current qpos (Warp work)."""
        self._mjw.kinematics(self._sim.model, self._sim.data)
        self._mjw.com_pos(self._sim.model, self._sim.data)

    def _site_jacobian(self) -> None:
        """(n, 3, nv) each of the translational and rotational Jacobians at `_point` (Warp work)."""
        self._mjw.jac(self._sim.model, self._sim.data, self._jacp, self._jacr, self._point, self._body)

    def jacobian(self) -> torch.Tensor:
        """(num_envs, 6, arm joints) the site's Jacobian (position rows, then rotation; world axes)
        at the current state."""
        sim = self._sim
        sim.launch(self._poses)
        self._point_t.copy_(sim.site_xpos[:, self._site])
        sim.launch(self._site_jacobian)
        return torch.cat((self._jacp_t, self._jacr_t), dim=1)[..., self._dofs]

    def drive(self, env: TaskEnv, command: torch.Tensor) -> None:
        sim = env.sim
        jacobian = self.jacobian()
        rotation = sim.xmat[:, self._base]  # base -> world, of the poses just recomputed
        delta = (self.scales * command).view(-1, 2, 3)
        error = (rotation[:, None] @ delta[..., None]).flatten(1)  # (n, 6) world axes
        step = damped_least_squares(jacobian, error, self.damping)
        q = sim.qpos[:, self._qpos] + step
        sim.ctrl[:, self.actuator_ids] = torch.minimum(torch.maximum(q, self._range[:, 0]), self._range[:, 1])
        for _ in range(env.cfg.actions.controller.decimation):
            sim.step()
