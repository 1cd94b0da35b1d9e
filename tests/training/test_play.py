"""phalanx play without a trained policy: zero or random actions in a registered task."""

from __future__ import annotations

import pytest
import torch

from helpers import make_cpu
from phalanx.cli import main
from phalanx.training.play import untrained_policy

PLAY = ["play", "cartpole", "--device", "cpu", "--num-envs", "4", "--steps", "20"]


def test_zero_and_random_actions() -> None:
    env = make_cpu("cartpole", num_envs=3)
    obs = env.reset()
    assert torch.equal(untrained_policy("zero", env, 0)(obs), torch.zeros(3, env.action_dim))
    first, again = untrained_policy("random", env, 7), untrained_policy("random", env, 7)
    a, b = first(obs), first(obs)
    assert a.abs().max() <= 1 and not torch.equal(a, b), "drawn anew every step, within [-1, 1]"
    assert torch.equal(again(obs), a), "seeded"


def test_play_policy_runs_without_a_checkpoint(capsys) -> None:
    assert main([*PLAY, "--policy", "random"]) == 0
    assert "episodes finished in 20 steps x 4 envs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy", "bogus"], "--policy: got 'bogus'; allowed: zero, random"),
        (["--policy", "zero", "--checkpoint", "last"], "--checkpoint: --policy zero plays without a trained run"),
        (["--policy", "zero", "--logger", "none"], "--logger: --policy zero plays without a trained run"),
    ],
)
def test_play_policy_refusals(flags: list[str], message: str, capsys) -> None:
    assert main([*PLAY, *flags]) == 2
    assert message in capsys.readouterr().err
