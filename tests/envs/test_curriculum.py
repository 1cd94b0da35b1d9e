"""Curriculum terms run at reset on the resetting envs' episodes: legged_gym's command curriculum
widens the forward-speed range only when those envs tracked well, once per episode length of
steps, up to its limit, and is logged. (`env.reset` does not step: `step_count` stays put.)"""

from __future__ import annotations

import torch

from helpers import make_cpu
from phalanx.envs import CurriculumTermCfg
from phalanx.envs.mdp import curriculum
from phalanx.training.registry import env_cfg

TRACK = "track_lin_vel_xy_exp"


def _env():
    cfg = env_cfg("anymal-flat")
    params = {"command": "base_velocity", "reward": TRACK, "threshold": 0.8, "step": 0.5, "limit": (-2.0, 2.0)}
    cfg.curriculum["lin_vel_x_max"] = CurriculumTermCfg(func=curriculum.command_velocity_levels, params=params)
    return make_cpu(cfg, num_envs=4, seed=0)


def _reset_with_sums(env, sums: list[float], mask: list[bool]) -> None:
    env.episode_reward_sum(TRACK)[:] = torch.tensor(sums)
    env.reset(torch.tensor(mask))


def test_command_range_widens_when_the_resetting_envs_tracked_well() -> None:
    env = _env()
    ranges = env.command_term("base_velocity").ranges
    best = env.cfg.rewards[TRACK].weight * env.max_episode_length * env.step_dt  # 20 s x weight 1
    assert ranges[0].tolist() == [-1.0, 1.0]
    _reset_with_sums(env, [0.7 * best, 0.7 * best, best, best], [True, True, False, False])
    assert ranges[0].tolist() == [-1.0, 1.0], "70 % on the resetting envs: not yet (the others do not count)"
    env.step_count.fill_(env.max_episode_length + 1)
    _reset_with_sums(env, [best] * 4, [True] * 4)
    assert ranges[0].tolist() == [-1.0, 1.0], "judged once per episode length of steps only"
    env.step_count.fill_(2 * env.max_episode_length)
    _reset_with_sums(env, [0.9 * best, 0.8 * best, 0.0, 0.0], [True, True, False, False])
    assert ranges[0].tolist() == [-1.5, 1.5], "85 % on average: harder"
    assert ranges[1:].tolist() == [[-1.0, 1.0], [-1.0, 1.0]], "only the forward speed"
    for _ in range(3):
        _reset_with_sums(env, [best] * 4, [True] * 4)
    assert ranges[0].tolist() == [-2.0, 2.0], "up to the limit"
    obs, reward, terminated, truncated, extras = env.step(torch.zeros(4, env.action_dim))
    assert float(extras["log"]["lin_vel_x_max"]) == 2.0


def test_commands_are_drawn_from_the_widened_range() -> None:
    env = _env()
    best = env.cfg.rewards[TRACK].weight * env.max_episode_length * env.step_dt
    for _ in range(2):
        _reset_with_sums(env, [best] * 4, [True] * 4)
    term = env.command_term("base_velocity")
    term.standing = 0.0
    seen = []
    for _ in range(50):
        term.resample(env, torch.ones(4, dtype=torch.bool))
        seen.append(term.command[:, 0].clone())
    seen = torch.cat(seen)
    assert seen.min() >= -2.0 and seen.max() <= 2.0 and seen.abs().max() > 1.0
