"""phalanx play without a trained policy: zero or random actions in a registered task."""

from __future__ import annotations

import signal

import pytest
import torch

from helpers import make_cpu, signal_in_a_weakref_callback
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


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the raise the callback drops
def test_a_stop_swallowed_while_play_starts_stops_it_at_its_first_step(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """SIGTERM landing where Python drops the raise (a weakref callback) while the env is built:
    play stops before its first step, one line, 143, instead of playing its whole rollout."""
    from phalanx.training import play

    steps = []
    run_episodes = play.run_episodes

    def counting(env, act, *args):
        signal_in_a_weakref_callback(signal.SIGTERM)
        return run_episodes(env, lambda obs: steps.append(1) or act(obs), *args)

    monkeypatch.setattr(play, "run_episodes", counting)
    assert main(["play", "cartpole", "--policy", "zero", "--device", "cpu", "--num-envs", "4", "--steps", "50"]) == 143
    assert capsys.readouterr().err.strip() == "phalanx play: stopped by SIGTERM"
    assert not steps
