"""Reading batched state cheaply: joint reads are views where the joints are one block, the
per-row non-finite check matches isfinite, and the root's roll and yaw match MuJoCo's rotation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers import make_cpu
from phalanx.envs.mdp import math as mdp_math
from phalanx.envs.mdp import observations, state
from phalanx.sim.columns import columns, nonfinite_rows


def test_consecutive_indices_read_as_a_slice_others_as_a_gather() -> None:
    device = torch.device("cpu")
    assert columns([3, 4, 5], device) == slice(3, 6)
    assert columns([], device) == slice(0, 0)
    for indices in ([0, 2], [4, 3], [1, 1]):
        gather = columns(indices, device)
        assert isinstance(gather, torch.Tensor) and gather.tolist() == indices


@pytest.mark.parametrize("task", ["cartpole", "ant"])
def test_joint_reads_are_views_with_the_gathered_values(task: str) -> None:
    env = make_cpu(task, num_envs=4)
    sim = env.sim
    sim.qpos.uniform_(-1, 1)
    sim.qvel.uniform_(-1, 1)
    pos, vel = state.joint_pos(env), state.joint_vel(env)
    assert torch.equal(pos, sim.qpos[:, sim.joint_qposadr]) and torch.equal(vel, sim.qvel[:, sim.joint_dofadr])
    assert pos.untyped_storage().data_ptr() == sim.qpos.untyped_storage().data_ptr(), "a view, not a copy"
    last = env.sim.joint_names[-1]
    picked = observations.joint_pos(env, last)
    assert torch.equal(picked, sim.qpos[:, sim.joint_qposadr[-1:]])
    spread = ".*" if task == "cartpole" else f"{env.sim.joint_names[0]}|{last}"  # ant: not one block
    assert torch.equal(observations.joint_vel(env, spread), sim.qvel[:, sim.joint_dofadr[env.joint_ids(spread)]])


def test_nonfinite_rows_matches_isfinite() -> None:
    value = torch.randn(7, 3, 2)
    value[1, 0, 0] = float("nan")
    value[3, 2, 1] = float("inf")
    value[4, 1, 1] = -float("inf")
    value[5] = 3e38  # large but finite
    expected = ~torch.isfinite(value).flatten(1).all(dim=1)
    assert nonfinite_rows(value).tolist() == expected.tolist() == [False, True, False, True, True, False, False]
    assert torch.compile(nonfinite_rows)(value).tolist() == expected.tolist()


def test_roll_and_yaw_match_the_rotation_matrix() -> None:
    """Extrinsic x-y-z angles from MuJoCo's rotation matrix R = Rz(yaw) Ry(pitch) Rx(roll):
    roll = atan2(R21, R22), yaw = atan2(R10, R00), away from pitch = +-90 degrees."""
    import mujoco

    q = torch.nn.functional.normalize(torch.randn(64, 4, dtype=torch.float64), dim=1)
    roll, yaw = [], []
    for quat in q.numpy():
        m = np.zeros(9)
        mujoco.mju_quat2Mat(m, quat)
        r = m.reshape(3, 3)
        roll.append(math.atan2(r[2, 1], r[2, 2]))
        yaw.append(math.atan2(r[1, 0], r[0, 0]))
    torch.testing.assert_close(mdp_math.roll_from_quat(q), torch.tensor(roll, dtype=torch.float64))
    torch.testing.assert_close(mdp_math.yaw_from_quat(q), torch.tensor(yaw, dtype=torch.float64))
