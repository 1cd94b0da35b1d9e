"""anymal-nav: actions command a frozen anymal-flat policy, which drives the joints for 10
low-level steps per env step; the goal is seen from the base; train asks for the checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from helpers import make_cpu
from phalanx.cli import main
from phalanx.tasks.anymal.mdp import navigation
from phalanx.training.registry import env_cfg

FLAT = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "1"]


@pytest.fixture(scope="module")
def walker(tmp_path_factory) -> Path:
    """An anymal-flat checkpoint (one CPU iteration: its weights only need to be its own)."""
    run = tmp_path_factory.mktemp("flat")
    assert main(["train", "anymal-flat", *FLAT, "--run-dir", str(run)]) == 0
    return run / "checkpoints" / "model_last.pt"


def _nav(walker: Path, num_envs: int = 4):
    cfg = env_cfg("anymal-nav")
    cfg.actions.low_level.checkpoint = str(walker)
    return make_cpu(cfg, num_envs=num_envs, seed=1)


class _Recording(torch.nn.Module):
    """The low-level actor, recording what it sees and returns."""

    def __init__(self, actor: torch.nn.Module):
        super().__init__()
        self.actor, self.inputs, self.outputs = actor, [], []

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.actor(obs)
        self.inputs.append(obs.clone())
        self.outputs.append(out.clone())
        return out


def test_actions_command_the_frozen_walker_for_ten_low_level_steps(walker: Path) -> None:
    env = _nav(walker)
    state = torch.load(walker, map_location="cpu", weights_only=True)
    torch.testing.assert_close(env.low_level.actor.actor[0].weight, state["policy"]["actor.0.weight"])
    assert env.action_dim == 3 and env.joints.dim == 12 and env.step_dt == pytest.approx(0.2)
    command = torch.tensor([[0.5, -0.2, 0.3]] * 4)
    env.step(command)
    recording = env.low_level.actor = _Recording(env.low_level.actor)
    physics_calls = []
    step = env.sim.step
    env.sim.step = lambda: (physics_calls.append(1), step())[1]
    env.step(command)
    assert len(recording.inputs) == 10 and len(physics_calls) == 10
    for obs in recording.inputs:
        torch.testing.assert_close(obs[:, 9:12], command)  # anymal-flat's velocity_commands slot
    for seen, previous in zip(recording.inputs[1:], recording.outputs[:-1], strict=True):
        torch.testing.assert_close(seen[:, 36:48], previous)  # its own last action, not the env's
    scale = env_cfg("anymal-flat").actions.scale
    torch.testing.assert_close(env.sim.ctrl, env.joints.offset + scale * recording.outputs[-1])
    torch.testing.assert_close(env.action, command)  # the env's action is the command


def test_goal_is_seen_from_the_base() -> None:
    env = make_cpu("anymal-nav", num_envs=2)
    term = env.command_term("pose_command")
    yaw = math.pi / 2  # the base faces +y
    env.sim.qpos[:, :2] = torch.tensor([1.0, 2.0])
    env.sim.qpos[:, 3:7] = torch.tensor([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    term.goal_w[:] = torch.tensor([1.0, 5.0, 0.0])  # 3 m straight ahead, heading +x
    term.update(env)
    torch.testing.assert_close(term.command, torch.tensor([[3.0, 0.0, -math.pi / 2]] * 2))
    torch.testing.assert_close(navigation.goal_distance(env, "pose_command"), torch.tensor([3.0, 3.0]))
    expected = 1 - math.tanh(3.0 / 2.0)
    torch.testing.assert_close(navigation.position_tracking_tanh(env, "pose_command", 2.0), torch.full((2,), expected))
    torch.testing.assert_close(navigation.heading_error_abs(env, "pose_command"), torch.full((2,), math.pi / 2))
    assert navigation.goal_reached(env, "pose_command", 0.5).tolist() == [0.0, 0.0]
    term.goal_w[0, :2] = torch.tensor([1.2, 2.3])
    term.update(env)
    assert navigation.goal_reached(env, "pose_command", 0.5).tolist() == [1.0, 0.0]


def test_goals_are_drawn_around_the_base_at_reset() -> None:
    env = make_cpu("anymal-nav", num_envs=64)
    goal = env.command_term("pose_command").goal_w
    offset = goal[:, :2] - env.sim.qpos[:, :2]
    assert offset.abs().max() <= 3.0 + 1e-5 and offset.abs().max() > 2.0
    assert goal[:, 2].abs().max() <= math.pi


def test_train_asks_for_the_walker_and_uses_it(walker: Path, tmp_path: Path, capsys) -> None:
    flags = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "1"]
    assert main(["train", "anymal-nav", *flags, "--run-dir", str(tmp_path / "a")]) != 0
    assert "--env.actions.low-level.checkpoint" in capsys.readouterr().err
    flat_run = ["--run-dir", str(tmp_path / "flat")]
    with pytest.raises(SystemExit) as exit_info:  # anymal-flat has no low-level policy to configure
        main(["train", "anymal-flat", *flags, *flat_run, "--env.actions.low-level.checkpoint", str(walker)])
    assert exit_info.value.code == 2 and "env.actions.low-level.checkpoint" in capsys.readouterr().err
    run = tmp_path / "b"
    walker_flag = ["--env.actions.low-level.checkpoint", str(walker)]
    assert main(["train", "anymal-nav", *flags, "--run-dir", str(run), *walker_flag]) == 0
    checkpoint = run / "checkpoints" / "model_last.pt"
    assert checkpoint.is_file()
    # play finds the walker through the run's config, and takes another one when told
    play = ["play", "anymal-nav", "--checkpoint", str(checkpoint), "--device", "cpu", "--num-envs", "2"]
    assert main(play) == 0  # one whole episode per env: the success rate over them
    out = capsys.readouterr().out
    assert "episodes finished" in out and "goal_reached" in out and "goal_distance" in out
    assert main([*play, "--low-level-checkpoint", str(tmp_path / "missing.pt")]) != 0
    assert "--low-level-checkpoint" in capsys.readouterr().err
    _exports_both_levels(checkpoint, walker, tmp_path / "exported")


def _exports_both_levels(checkpoint: Path, walker: Path, out: Path) -> None:
    """The navigation policy's actions are the walker's command; the exported walker acts as the
    frozen one inside the env, on what it observes there."""
    export = ["export", "anymal-nav", "--checkpoint", str(checkpoint), "--device", "cpu", "--format", "torchscript"]
    assert main([*export, "--out", str(out)]) == 0
    high, low = (json.loads((out / f"{stem}.json").read_text()) for stem in ("policy", "low_level"))
    assert high["actions"]["command"] == "base_velocity" and high["actions"]["low_level_sidecar"] == "low_level.json"
    assert high["actions"]["low_level_steps_per_action"] == 10 and high["output"]["shape"] == ["batch", 3]
    assert low["task"] == "anymal-flat" and low["checkpoint"] == str(walker) and len(low["actions"]["joints"]) == 12
    env = _nav(walker, num_envs=2)
    assert low["control_dt"] == pytest.approx(env.step_dt / 10)
    assert low["observations"]["obs"][-1]["slice"][1] == low["inputs"][0]["shape"][1]
    obs = env.low_level.observe(env)
    exported = torch.jit.load(str(out / "low_level.pt"))
    torch.testing.assert_close(exported(obs), env.low_level.actor(obs), atol=1e-5, rtol=0)


def test_the_low_level_command_must_be_one_the_walker_observes() -> None:
    from phalanx.core.errors import ConfigError

    cfg = env_cfg("anymal-nav")
    cfg.actions.low_level.command = "pose_command"
    with pytest.raises(ConfigError, match="actions.low_level.command"):
        make_cpu(cfg, num_envs=2)
