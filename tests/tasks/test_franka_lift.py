"""franka-lift: a scripted grasp closes the gripper on the cube and carries it to the goal in the
env (MuJoCo Warp, CPU, the task's own contacts and time step), and the task's terms judge it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import make_cpu, site_ik
from phalanx.envs.mdp import bodies
from phalanx.tasks.franka.mdp import lift
from phalanx.training.registry import env_cfg

DOWN = np.diag([1.0, -1.0, -1.0])
"""The hand's axes (columns, world) at the home pose: z down."""


def test_a_scripted_grasp_lifts_the_cube_to_the_goal_and_the_terms_see_it() -> None:
    cfg = env_cfg("franka-lift")
    cfg.events = {}  # the cube where the scene puts it: 0.5 m ahead
    env = make_cpu(cfg, num_envs=2)
    env.reset()
    sim = env.sim
    arm = sim.joint_qposadr[env.joint_ids("panda_joint[1-7]")].numpy()
    dofs = sim.joint_dofadr[env.joint_ids("panda_joint[1-7]")].numpy()
    home = sim.default_qpos.numpy().astype(np.float64)
    cube = sim.site_names.index("cube")
    start = sim.qpos[0, sim.root_qposadr : sim.root_qposadr + 3].numpy().astype(np.float64)  # the cube is the root
    # The open gripper around the cube, then the goal 25 cm above where the cube rests.
    at_cube = site_ik(sim.mjm, home, arm, dofs, start, DOWN)
    sim.qpos[:, arm] = torch.as_tensor(at_cube, dtype=torch.float32)
    goal = env.command_term("object_pose")
    goal.command[:, :3] = torch.as_tensor(start + (0.0, 0.0, 0.25), dtype=torch.float32)
    target = site_ik(sim.mjm, home, arm, dofs, start + (0.0, 0.0, 0.25), DOWN)

    def act(joints: np.ndarray, grip: float) -> torch.Tensor:
        arm_action = torch.as_tensor((joints - home[arm]) / 0.5, dtype=torch.float32)
        return torch.cat((arm_action, torch.tensor([grip]))).expand(2, -1)

    for _ in range(20):  # 0.4 s: close
        env.step(act(at_cube, -1.0))
    assert lift.site_lifted(env, "cube", 0.04).sum() == 0
    for k in range(75):  # 1.5 s: carry it up along a straight line of joint targets
        env.step(act(at_cube + (target - at_cube) * min(1.0, (k + 1) / 50), -1.0))
    assert (sim.site_xpos[:, cube, 2] > 0.2).all(), sim.site_xpos[:, cube]
    assert lift.site_lifted(env, "cube", 0.04).tolist() == [1.0, 1.0]
    at_goal = lift.site_at_goal(env, "cube", tolerance=0.05)
    assert at_goal.tolist() == [1.0, 1.0], bodies.site_distance(env, "cube", "ee")
    reward = lift.lifted_site_goal_tanh(env, "cube", minimal_height=0.04, std=0.3)
    assert (reward > 0.8).all(), reward
    assert (bodies.site_distance(env, "ee", "cube") < 0.02).all(), "held between the finger pads"
    for _ in range(20):  # 0.4 s: open, and it falls
        env.step(act(target, 1.0))
    assert (sim.site_xpos[:, cube, 2] < 0.04).all(), sim.site_xpos[:, cube]
    assert lift.lifted_site_goal_tanh(env, "cube", minimal_height=0.04, std=0.3).tolist() == [0.0, 0.0]


def test_the_cube_is_placed_at_random_within_its_ranges() -> None:
    env = make_cpu("franka-lift", num_envs=64)
    env.reset()
    position = env.sim.qpos[:, 9:12]
    x, y, z = position.unbind(1)
    assert ((0.4 <= x) & (x <= 0.6) & (y.abs() <= 0.25) & (z == 0.025)).all(), position
    assert x.std() > 0.04 and y.std() > 0.1, "spread over the ranges"


def test_the_action_penalties_grow_after_the_curriculum_steps_and_a_cube_off_the_table_ends_its_episode() -> None:
    cfg = env_cfg("franka-lift")
    for term in cfg.curriculum.values():
        term.params["num_steps"] = 3
    env = make_cpu(cfg, num_envs=2)
    env.reset()
    dt = env.step_dt
    action_rate = env.rewards.names.index("action_rate")
    zero = torch.zeros(2, env.action_dim)
    for _ in range(2):
        env.step(zero)
    assert env.rewards.weights[action_rate].item() == pytest.approx(-1e-4 * dt)
    # The cube of env 1 pushed off the table's far edge.
    env.sim.qpos[1, env.sim.root_qposadr] = 1.2
    _, _, terminated, truncated, _ = env.step(zero)
    assert terminated.tolist() == [False, True] and not truncated.any()
    assert env.rewards.weights[action_rate].item() == pytest.approx(-1e-1 * dt), "switched at step 3's reset"
