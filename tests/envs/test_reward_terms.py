"""Every reward term on a hand-made state, with the expected value worked out in the comment."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import make_cpu
from phalanx.envs.mdp import rewards

TARGET = (1000.0, 0.0, 0.0)


def _yaw_quat(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def _roll_quat(roll: float) -> list[float]:
    return [math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0]


@pytest.fixture(scope="module")
def ant():
    """Four ants: 0 upright facing +x at the origin, 1 yawed 90 deg, 2 yawed 45 deg, 3 rolled 30 deg."""
    env = make_cpu("ant", num_envs=4)
    qpos = env.sim.default_qpos.repeat(4, 1)
    for i, quat in enumerate([_yaw_quat(0), _yaw_quat(math.pi / 2), _yaw_quat(math.pi / 4), _roll_quat(math.pi / 6)]):
        qpos[i, :3] = torch.tensor([0.0, 0.0, 0.6])
        qpos[i, 3:7] = torch.tensor(quat)
    env.sim.qpos[:] = qpos
    env.sim.qvel.zero_()
    return env


def test_upright_bonus(ant) -> None:
    # up projection: 1, 1, 1 for pure yaw; cos(30 deg) = 0.866 < 0.93 for the rolled ant.
    torch.testing.assert_close(rewards.upright_bonus(ant, threshold=0.93), torch.tensor([1.0, 1.0, 1.0, 0.0]))


def test_move_to_target_bonus(ant) -> None:
    # heading cosine to +x: 1 -> bonus 1; 0 -> 0 / 0.8 = 0; cos 45 = 0.70711 -> 0.70711 / 0.8 = 0.88388;
    # rolling about x keeps the heading: 1 -> 1.
    expected = torch.tensor([1.0, 0.0, 0.70711 / 0.8, 1.0])
    torch.testing.assert_close(rewards.move_to_target_bonus(ant, 0.8, TARGET), expected, atol=1e-5, rtol=0)


def test_progress(ant) -> None:
    # potential = -distance / env dt with env dt = 2 / 120 s. Moving 0.1 m toward the target raises it by
    # 0.1 / (1 / 60) = 6.0; moving 0.3 m away lowers it by 0.3 * 60 = 18.0. Potentials near -60000 are
    # float32 with a resolution of 0.0039, hence the tolerance.
    term = rewards.progress(ant, target_pos=TARGET)
    ant.sim.qpos[0, 0] += 0.1
    ant.sim.qpos[1, 0] -= 0.3
    reward = term(ant)
    ant.sim.qpos[0, 0] -= 0.1
    ant.sim.qpos[1, 0] += 0.3
    torch.testing.assert_close(reward, torch.tensor([6.0, -18.0, 0.0, 0.0]), atol=1e-2, rtol=0)


def test_action_l2_and_power(ant) -> None:
    # action row 0 = (1, -2, 0, ...), joint velocities of the actuated joints = (0.5, 0.5, 0, ...):
    # action_l2 = 1 + 4 = 5; power = |1 * 0.5| + |-2 * 0.5| = 1.5 (all gears 15, so gear / max gear = 1).
    ant.action.zero_()
    ant.action[0, :2] = torch.tensor([1.0, -2.0])
    qvel = ant.sim.qvel.clone()
    ant.sim.qvel[0, ant.sim.joint_dofadr[ant.joints.joint_ids[:2]]] = 0.5
    try:
        torch.testing.assert_close(rewards.action_l2(ant)[0], torch.tensor(5.0))
        torch.testing.assert_close(rewards.power_consumption(ant)[0], torch.tensor(1.5))
    finally:
        ant.sim.qvel[:] = qvel
        ant.action.zero_()


def test_joint_pos_limits_penalty_ratio(ant) -> None:
    # front_left_ankle range [30, 100] deg: at 100 deg the scaled position is 1 -> (1 - 0.99) / 0.01 = 1.
    # front_left_hip range [-40, 40] deg: at 39.9 deg it is 0.9975 -> (0.9975 - 0.99) / 0.01 = 0.75.
    # Elsewhere the ant is at its home pose (inside the threshold): 0.
    qpos = ant.sim.qpos.clone()
    names = ant.sim.joint_names
    adr = {name: int(ant.sim.joint_qposadr[names.index(name)]) for name in ("front_left_ankle", "front_left_hip")}
    ant.sim.qpos[0, adr["front_left_ankle"]] = math.radians(100.0)
    ant.sim.qpos[1, adr["front_left_hip"]] = math.radians(39.9)
    try:
        penalty = rewards.joint_pos_limits_penalty_ratio(ant, threshold=0.99)
        torch.testing.assert_close(penalty, torch.tensor([1.0, 0.75, 0.0, 0.0]), atol=1e-3, rtol=0)
    finally:
        ant.sim.qpos[:] = qpos


def test_alive_and_terminated(ant) -> None:
    ant.terminated[:] = torch.tensor([False, True, False, True])
    torch.testing.assert_close(rewards.is_alive(ant), torch.tensor([1.0, 0.0, 1.0, 0.0]))
    torch.testing.assert_close(rewards.is_terminated(ant), torch.tensor([0.0, 1.0, 0.0, 1.0]))
    ant.terminated.zero_()


def test_cartpole_terms_and_weighted_sum() -> None:
    # Cartpole at pole angle 0.5 rad, pole velocity -1 rad/s, cart velocity 2 m/s:
    # pole_pos = 0.25, pole_vel = 1, cart_vel = 2, alive 1, terminating 0 ->
    # reward = 1 * 1 - 2 * 0 - 1 * 0.25 - 0.01 * 2 - 0.005 * 1 = 0.725 (Direct task: no dt factor).
    env = make_cpu("cartpole", num_envs=2)
    env.sim.qpos[:] = torch.tensor([0.0, 0.5])
    env.sim.qvel[:] = torch.tensor([2.0, -1.0])
    env.terminated.zero_()
    assert float(rewards.joint_pos_l2(env, "hinge")[0]) == pytest.approx(0.25)
    assert float(rewards.joint_vel_l1(env, "hinge")[0]) == pytest.approx(1.0)
    assert float(rewards.joint_vel_l1(env, "slider")[0]) == pytest.approx(2.0)
    reward = env.rewards.weigh(env.rewards.values(env), torch.zeros(2, dtype=torch.bool))
    torch.testing.assert_close(reward, torch.full((2,), 0.725))


def test_reward_weights_scale_by_env_dt_only_where_configured() -> None:
    # ant (manager-based terms): weight x env dt (1 / 60 s), e.g. alive 0.5 -> 0.008333;
    # cartpole (Direct task semantics): the weights as they are.
    ant, cartpole = make_cpu("ant", num_envs=2), make_cpu("cartpole", num_envs=2)
    torch.testing.assert_close(ant.rewards.weights, torch.tensor([t.weight / 60.0 for t in ant.cfg.rewards.values()]))
    torch.testing.assert_close(cartpole.rewards.weights, torch.tensor([1.0, -2.0, -1.0, -0.01, -0.005]))
