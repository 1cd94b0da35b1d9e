"""The env step compiled by torch.compile (as it runs on the GPU, inside the captured graph)
matches eager stepping with the legged features that live in the step: the heading command,
the actuation delay, the command curriculum, the low-level policy of a hierarchical task, and
the resets that drive them; the step traced when the env was built serves every later step."""

from __future__ import annotations

import torch
from torch._dynamo.utils import counters

from helpers import make_cpu
from phalanx.envs import CurriculumTermCfg
from phalanx.envs.mdp import curriculum
from phalanx.training.registry import env_cfg


def test_compiled_legged_step_matches_eager() -> None:
    cfg = env_cfg("anymal-flat")
    cfg.actions.delay_range = (0, 2)
    cfg.episode_length_s = 0.2  # 10 steps: time-outs reset every env inside the step
    params = {
        "command": "base_velocity",
        "reward": "track_lin_vel_xy_exp",
        "threshold": 0.0,
    }  # widen at every due reset
    cfg.curriculum["lin_vel_x_max"] = CurriculumTermCfg(func=curriculum.command_velocity_levels, params=params)
    envs = [make_cpu(cfg, num_envs=8, seed=1, compile=compiled) for compiled in (True, False)]
    g = torch.Generator().manual_seed(0)
    resets, graphs = 0, counters["stats"]["unique_graphs"]
    for _ in range(25):
        actions = torch.rand(8, 12, generator=g) * 2 - 1
        (obs_c, rew_c, term_c, trunc_c, ext_c), (obs_e, rew_e, term_e, trunc_e, ext_e) = (e.step(actions) for e in envs)
        torch.testing.assert_close(obs_c["policy"], obs_e["policy"], atol=1e-3, rtol=1e-3)
        torch.testing.assert_close(rew_c, rew_e, atol=1e-3, rtol=1e-3)
        assert torch.equal(term_c | trunc_c, term_e | trunc_e)
        assert float(ext_c["log"]["lin_vel_x_max"]) == float(ext_e["log"]["lin_vel_x_max"])
        resets += int((term_e | trunc_e).sum())
    assert resets >= 16, "every env reset at least twice"
    assert counters["stats"]["unique_graphs"] == graphs, "a step traced again: a guard of the first trace failed"
    ranges = [e.command_term("base_velocity").ranges for e in envs]
    assert torch.equal(ranges[0], ranges[1]) and ranges[1][0, 1] > 1.0, "the curriculum widened, in both"
    assert torch.equal(envs[0].actions.delay, envs[1].actions.delay)


def test_compiled_hierarchical_step_matches_eager() -> None:
    """anymal-nav: ten low-level policy steps inside one compiled env step, time-outs included;
    the low-level observation, compiled on its own between the physics steps, is traced once."""
    torch._dynamo.reset()  # the other tests' traces of the same functions would count as first traces
    with torch._dynamo.config.patch(error_on_recompile=True):
        envs = [make_cpu("anymal-nav", num_envs=4, seed=1, compile=compiled) for compiled in (True, False)]
        g = torch.Generator().manual_seed(0)
        resets = 0
        for _ in range(42):  # episodes are 40 steps: every env ends one
            actions = torch.rand(4, 3, generator=g) * 2 - 1
            (obs_c, rew_c, term_c, trunc_c, _), (obs_e, rew_e, term_e, trunc_e, _) = (e.step(actions) for e in envs)
            torch.testing.assert_close(obs_c["policy"], obs_e["policy"], atol=1e-3, rtol=1e-3)
            torch.testing.assert_close(rew_c, rew_e, atol=1e-3, rtol=1e-3)
            assert torch.equal(term_c | trunc_c, term_e | trunc_e)
            resets += int((term_e | trunc_e).sum())
    assert resets >= 4, "the comparison covers resets"
