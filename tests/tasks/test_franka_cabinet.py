"""franka-cabinet: a scripted grasp of the handle pulls the drawer open in the env (MuJoCo Warp,
CPU, the task's own contacts and time step), and the task's terms judge it."""

from __future__ import annotations

import numpy as np
import torch

from helpers import make_cpu, site_ik
from phalanx.tasks.franka.mdp import drawer
from phalanx.training.registry import env_cfg

FACING = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
"""The hand's axes (columns, world) facing the drawer: z into it (+x), fingers closing vertically (y up)."""


def test_a_scripted_grasp_pulls_the_drawer_open_and_the_terms_see_it() -> None:
    cfg = env_cfg("franka-cabinet")
    cfg.events = {}
    env = make_cpu(cfg, num_envs=2)
    env.reset()
    env.step(torch.zeros(2, env.action_dim))  # site poses are read after a step
    sim = env.sim
    arm = sim.joint_qposadr[env.joint_ids("panda_joint[1-7]")].numpy()
    dofs = sim.joint_dofadr[env.joint_ids("panda_joint[1-7]")].numpy()
    home = sim.default_qpos.numpy().astype(np.float64)
    handle = sim.site_xpos[0, sim.site_names.index("handle")].numpy().astype(np.float64)
    at_handle = site_ik(sim.mjm, home, arm, dofs, handle, FACING)
    pulled = site_ik(sim.mjm, home, arm, dofs, handle - (0.3, 0.0, 0.0), FACING)
    sim.qpos[:, arm] = torch.as_tensor(at_handle, dtype=torch.float32)

    def act(joints: np.ndarray, grip: float) -> torch.Tensor:
        return torch.cat((torch.as_tensor(joints - home[arm], dtype=torch.float32), torch.tensor([grip]))).expand(2, -1)

    env.step(act(at_handle, 1.0))
    assert drawer.grasped_around_handle(env).tolist() == [1.0, 1.0], "left pad above the bar, right below"
    assert (drawer.align_with_handle(env) > 0.95).all(), drawer.align_with_handle(env)
    assert (drawer.approach_handle(env, threshold=0.2) > 1.9).all()
    open_reward = drawer.close_on_handle(env, 0.03, 0.04, "panda_finger_joint[12]")
    for _ in range(20):  # 0.4 s: close on the bar
        env.step(act(at_handle, -1.0))
    assert (drawer.close_on_handle(env, 0.03, 0.04, "panda_finger_joint[12]") > open_reward + 0.02).all()
    assert drawer.drawer_opened(env, 0.01).tolist() == [0.0, 0.0]
    for k in range(75):  # 1.5 s: pull 30 cm straight back
        env.step(act(at_handle + (pulled - at_handle) * min(1.0, (k + 1) / 50), -1.0))
    opening = drawer.drawer_opening(env)
    assert ((0.2 < opening) & (opening < 0.32)).all(), opening
    assert drawer.drawer_opened(env, 0.2).tolist() == [1.0, 1.0]
    assert drawer.grasped_around_handle(env).tolist() == [1.0, 1.0], "held through the pull"
    assert drawer.drawer_stages(env).tolist() == [1.5, 1.5]
    torch.testing.assert_close(drawer.open_drawer_bonus(env), 2.0 * opening)
