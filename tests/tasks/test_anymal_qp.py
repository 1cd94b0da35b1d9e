"""anymal-qp: the policy's actions correct the heuristic high level of the QP quadruped
controller, which drives the torque-controlled ANYmal at every physics step (MuJoCo Warp, CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import make_cpu
from phalanx.control.footholds import safe_footholds
from phalanx.core.errors import ConfigError
from phalanx.envs import LowLevelPolicyCfg
from phalanx.envs.mdp import state
from phalanx.tasks.anymal.mdp import quadruped_control
from phalanx.training.registry import env_cfg, play_env_cfg

ROOT = Path(__file__).resolve().parents[2]


def _walk(commands: list[tuple[float, float, float]], actions: torch.Tensor, seconds: float) -> dict[str, torch.Tensor]:
    """Runs one env per velocity command (forward, lateral, yaw rate) under fixed `actions`, from
    the home pose, with no pushes or randomization. Returns the base-frame velocities and yaw
    rates averaged over the last second, and the bases' lowest heights."""
    cfg = env_cfg("anymal-qp")
    cfg.events = {}
    cfg.commands["base_velocity"].params.update(standing=0.0, heading=None)
    env = make_cpu(cfg, num_envs=len(commands))
    env.command("base_velocity").copy_(torch.tensor(commands))  # held: resampled only after 10 s
    steps, last = round(seconds / env.step_dt), round(1.0 / env.step_dt)
    velocity, lowest = torch.zeros(len(commands), 3), torch.full((len(commands),), float("inf"))
    for i in range(steps):
        _, _, terminated, truncated, extras = env.step(actions)
        assert not (terminated | truncated).any(), "a robot fell"
        lowest = torch.minimum(lowest, state.root_pos_w(env)[:, 2])
        if i >= steps - last:
            velocity[:, :2] += state.root_lin_vel_b(env)[:, :2] / last
            velocity[:, 2] += state.root_ang_vel_b(env)[:, 2] / last
    assert (quadruped_control.qp_infeasible(env) == 0).all()
    return {"velocity": velocity, "lowest": lowest}


def test_the_heuristic_walks_and_turns_as_commanded_and_the_actions_correct_it() -> None:
    """Zero actions: the heuristic alone follows forward and yaw-rate commands. A correction of
    the center of mass's acceleration (2 m/s^2 forward, in the base's yaw frame) on a robot told
    to stand moves it forward until the heuristic's velocity loop (3 /s) balances it: 0.67 m/s
    asked, about 0.45 walked (the heuristic walks 10-30 % slower than it asks for)."""
    commands = [(0.5, 0.0, 0.0), (0.0, 0.0, 0.6), (0.0, 0.0, 0.0)]
    actions = torch.zeros(3, 16)
    actions[2, 0] = 1.0  # x acceleration_scale (2 m/s^2)
    out = _walk(commands, actions, 3.0)
    forward, turning, pushed = out["velocity"]
    assert 0.35 < forward[0] < 0.6 and abs(forward[1]) < 0.1 and abs(forward[2]) < 0.1, forward
    assert abs(turning[0]) < 0.1 and abs(turning[1]) < 0.1 and 0.4 < turning[2] < 0.7, turning
    assert 0.35 < pushed[0] < 0.85 and abs(pushed[1]) < 0.1, pushed
    assert (out["lowest"] > 0.45).all(), "the bases stay up"


def test_the_controller_state_resumes_exactly() -> None:
    env = make_cpu("anymal-qp", num_envs=2, seed=3)
    g = torch.Generator().manual_seed(0)
    actions = [torch.rand(2, env.action_dim, generator=g) * 2 - 1 for _ in range(6)]
    for a in actions[:3]:
        env.step(a)
    saved = env.state_dict()
    assert {"phase", "liftoff", "fresh", "qp_x", "qp_y", "qp_rho", "infeasible"} <= set(saved["actions"]["low_level"])
    first = [env.step(a)[0]["policy"].clone() for a in actions[3:]]
    env.load_state_dict(saved)
    again = [env.step(a)[0]["policy"].clone() for a in actions[3:]]
    for x, y in zip(first, again, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_a_controller_task_refuses_a_low_level_policy_or_a_delay_beside_it() -> None:
    cfg = env_cfg("anymal-qp")
    cfg.actions.low_level = LowLevelPolicyCfg(task="anymal-flat")
    with pytest.raises(ConfigError, match="a low-level policy or a controller, not both") as error:
        cfg.check()
    assert error.value.field == "env.actions"
    cfg = env_cfg("anymal-qp")
    cfg.actions.delay_range = (0, 2)
    with pytest.raises(ConfigError, match="not supported with actions.controller"):
        cfg.check()


def test_the_one_kernel_qp_steps_the_robots_as_the_torch_qp() -> None:
    """anymal-qp with qp_backend="warp" (the force QP as one Warp kernel): one env step (4 control
    steps, each with its QP) from the same state gives the torch solve's observations to float32
    rounding: within 4x of how far the torch solve's own observations move when the actions are
    scaled by 1 + 1e-6 (contacts make the step that sensitive; such differences grow to tenths
    within 5 steps, so later steps are only checked finite); an unknown backend, a bad block
    size, a contact height <= 0, a foothold reach below the search's spacing and a swing stiffness
    <= 0 are refused naming the param."""
    cfg = env_cfg("anymal-qp")
    envs = []
    for backend in ("torch", "warp"):
        cfg.actions.controller.params["qp_backend"] = backend
        envs.append(make_cpu(cfg, num_envs=4, seed=2))
    assert envs[1].low_level.controller.body.qp.backend == "warp"
    cfg.actions.controller.params["qp_backend"] = "torch"
    nudged = make_cpu(cfg, num_envs=4, seed=2)
    actions = 0.5 * torch.randn(5, 4, envs[0].action_dim, generator=torch.Generator().manual_seed(0))
    ours, theirs = (env.step(actions[0])[0]["policy"] for env in envs)
    sensitivity = (nudged.step(actions[0] * (1 + 1e-6))[0]["policy"] - ours).abs().max()
    assert (ours - theirs).abs().max() <= 4 * sensitivity, (ours - theirs).abs().max()
    for action in actions[1:]:
        assert torch.isfinite(envs[1].step(action)[0]["policy"]).all()
    assert (quadruped_control.qp_infeasible(envs[1]) == 0).all()
    cfg.actions.controller.params["qp_backend"] = "cuda"
    with pytest.raises(ConfigError, match="must be one of 'auto', 'torch', 'warp', got 'cuda'") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.qp_backend"
    cfg.actions.controller.params.update(qp_backend="auto", qp_block_dim=100)
    with pytest.raises(ConfigError, match="must be a multiple of 32 in \\[32, 256\\], got 100") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.qp_block_dim"
    cfg.actions.controller.params.update(qp_block_dim=32, contact_height=0.0)
    with pytest.raises(ConfigError, match="must be a finite number > 0 m, got 0.0") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.contact_height"
    cfg.actions.controller.params.update(contact_height=0.02, foothold_reach=0.01)
    with pytest.raises(
        ConfigError, match="must be 0 .footholds as asked. or at least the search's spacing, 0.05 m; got 0.01"
    ) as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.foothold_reach"
    cfg.actions.controller.params.update(foothold_reach=0.0, swing_kp=-800.0)
    with pytest.raises(ConfigError, match="must be a finite number > 0 N/m, got -800.0") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.swing_kp"


def test_on_the_stones_footholds_land_on_safe_ground_and_swings_lift_at_least_as_on_flat_ground() -> None:
    """anymal-stones-qp's high level looks at the terrain: every foothold it asks for is one the
    foothold search keeps (level ground, no hole, or none safe in reach), and each swing's lift is
    at least the controller's fixed one. Without the search some footholds land on edges (the
    search would move them)."""
    cfg = play_env_cfg("anymal-stones-qp", env_cfg("anymal-stones-qp"))
    cfg.terrain_command = None
    env = make_cpu(cfg, num_envs=10)
    env.terrain.curriculum.levels.copy_(torch.arange(10))  # one robot on each level
    env.reset()
    control = env.low_level
    assert control.search is not None and control.swing_clearance > 0
    zeros = torch.zeros(10, env.action_dim)
    moved = 0
    for _ in range(30):
        env.step(zeros)
        robot, ground = control._state(env)
        asked = control._command(env, robot, ground, zeros)
        xy = asked.footholds[..., :2]
        torch.testing.assert_close(safe_footholds(xy, env.terrain.height_at, control.search), xy, rtol=0, atol=0)
        assert (asked.swing_height >= control.controller.cfg.swing_height).all()
        control.search, search = None, control.search
        blind = control._command(env, robot, ground, zeros).footholds[..., :2]
        control.search = search
        moved += int((safe_footholds(blind, env.terrain.height_at, search) != blind).any(-1).sum())
    assert moved > 0


def test_tools_stones_falls_names_a_cause_for_every_fall_once(tmp_path) -> None:
    """tools/stones_falls.py over one robot per level: each robot either still walks at the end or
    fell once, under one cause (or "none of these"); the higher levels make some fall."""
    out = tmp_path / "falls.json"
    command = [sys.executable, str(ROOT / "tools" / "stones_falls.py"), "--num-envs", "10", "--steps", "150"]
    subprocess.run([*command, "--out", str(out)], check=True, capture_output=True, timeout=600)
    result = json.loads(out.read_text())
    fell = [sum(row[level] for row in result["falls"].values()) for level in range(10)]
    assert all(f + w == 1 for f, w in zip(fell, result["walking"], strict=True)), (fell, result["walking"])
    assert sum(fell) > 0
