"""FastTD3's pieces against hand computation: the categorical projection, the critics' loss (which
FastSAC shares), the target action's smoothing and the actor's loss (tests/rl/test_replay.py:
the buffer's n-step sums)."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import constant_critic
from phalanx.rl.critics import critic_loss, project
from phalanx.rl.off_policy_cfg import TD3Cfg
from phalanx.rl.td3 import TanhActor, actor_loss, target_actions

SUPPORT = torch.tensor([-1.0, 0.0, 1.0])  # 3 atoms, 1 apart


def _project(probs, reward, bootstrap, discount):
    one = torch.ones(1)
    return project(torch.tensor([probs]), SUPPORT, reward * one, bootstrap * one, discount * one)[0]


def test_projection_splits_each_moved_atom_between_its_neighbours() -> None:
    # r = 0.5, gamma^n = 0.5: atoms -1, 0, 1 move to 0, 0.5, 1. Mass 0.2 lands on atom 0 exactly,
    # 0.5 splits half and half between 0 and 1, 0.3 lands on 1: [0, 0.2 + 0.25, 0.25 + 0.3].
    out = _project([0.2, 0.5, 0.3], 0.5, 1.0, 0.5)
    torch.testing.assert_close(out, torch.tensor([0.0, 0.45, 0.55]))
    # The mean is kept: 0.2 * 0 + 0.5 * 0.5 + 0.3 * 1 = 0.55.
    assert float((out * SUPPORT).sum()) == pytest.approx(0.55)


@pytest.mark.parametrize(
    ("reward", "expected"),
    [
        (0.25, [0.0, 0.75, 0.25]),  # between atoms 0 and 1, a quarter of the way
        (-1.0, [1.0, 0.0, 0.0]),  # on the first atom exactly
        (0.0, [0.0, 1.0, 0.0]),  # on an inner atom exactly: all of it there, not twice
        (1.0, [0.0, 0.0, 1.0]),  # on the last atom exactly
        (5.0, [0.0, 0.0, 1.0]),  # past the support: clamped to its end
    ],
)
def test_an_ended_episode_projects_onto_its_reward(reward: float, expected: list[float]) -> None:
    """bootstrap 0: every atom moves to the reward."""
    torch.testing.assert_close(_project([0.2, 0.5, 0.3], reward, 0.0, 0.9), torch.tensor(expected))


def _batch(reward: float, bootstrap: float) -> dict:
    obs = {"policy": torch.randn(5, 2), "critic": torch.randn(5, 2)}
    ones = torch.ones(5)
    return {
        "obs": obs,
        "next_obs": {k: torch.randn(5, 2) for k in obs},
        "actions": torch.zeros(5, 1),
        "reward": reward * ones,
        "bootstrap": bootstrap * ones,
        "discount": 0.99 * ones,
    }


def test_critic_loss_is_the_cross_entropy_to_the_ended_episodes_reward() -> None:
    """Episodes that ended with reward 0: the target is atom 0 (value 0) alone, so each critic's
    loss is -log softmax(logits)[1]. softmax([0, 0, ln 2])[1] = 1/4 and softmax([ln 2, 0, 0])[1] = 1/4:
    loss = 2 ln 4."""
    critic = constant_critic([0.0, 0.0, math.log(2)], [math.log(2), 0.0, 0.0])
    batch = _batch(0.0, 0.0)
    loss, target = critic_loss(critic, critic, batch, batch["actions"], batch["reward"], True)
    assert float(loss.detach()) == pytest.approx(2 * math.log(4), rel=1e-6)
    assert float(target) == pytest.approx(0.0, abs=1e-6)


def test_clipped_double_q_learns_the_smaller_target() -> None:
    """Target critics valued 0.25 (softmax [1/4, 1/4, 1/2]) and -0.25 ([1/2, 1/4, 1/4]), an ended
    episode's bootstrap 0 aside: reward 0, bootstrap 1, discount 1 on [-1, 0, 1] keep each target
    where it is. With clipped double Q both critics learn [1/2, 1/4, 1/4]; without, each its own.
    Online critics [ln 2, 0, 0] (softmax [1/2, 1/4, 1/4]) and uniform: cross-entropies
    H([1/2, 1/4, 1/4], [1/2, 1/4, 1/4]) = 1.5 ln 2 and H(., uniform) = ln 3 with clipped double Q;
    without, critic 1 meets [1/4, 1/4, 1/2]: 0.25 ln 2 + 0.25 ln 4 + 0.5 ln 4 = 1.75 ln 2."""
    target = constant_critic([0.0, 0.0, math.log(2)], [math.log(2), 0.0, 0.0])
    critic = constant_critic([math.log(2), 0.0, 0.0], [0.0, 0.0, 0.0])
    batch = _batch(0.0, 1.0)
    batch["discount"] = torch.ones(5)
    loss, value = critic_loss(critic, target, batch, batch["actions"], batch["reward"], True)
    assert float(loss.detach()) == pytest.approx(1.5 * math.log(2) + math.log(3), rel=1e-5)
    assert float(value) == pytest.approx(-0.25, rel=1e-5)
    loss, _ = critic_loss(critic, target, batch, batch["actions"], batch["reward"], False)
    assert float(loss.detach()) == pytest.approx(1.75 * math.log(2) + math.log(3), rel=1e-5)


def test_a_target_at_the_end_of_any_support_stays_on_its_last_atom() -> None:
    """An ended episode's reward past v_max, or at it, lands on the last atom, also where
    (v_max - v_min) / delta rounds one float step past it (251 atoms on [-1, 150])."""
    support = torch.linspace(-1.0, 150.0, 251)
    probs = torch.full((2, 251), 1 / 251)
    out = project(probs, support, torch.tensor([1000.0, 150.0]), torch.zeros(2), torch.ones(2))
    torch.testing.assert_close(out[:, -1], torch.ones(2))


@pytest.mark.parametrize(("clipped", "expected"), [(True, 0.25), (False, 0.0)])
def test_actor_loss_is_minus_the_critics_value(clipped: bool, expected: float) -> None:
    """Critics valued 0.25 and -0.25 (as above): -min = 0.25, -mean = 0."""
    critic = constant_critic([0.0, 0.0, math.log(2)], [math.log(2), 0.0, 0.0])
    actor = TanhActor(2, 1, (4,), 0.01, 1.0)
    assert float(actor_loss(critic, actor, _batch(0.0, 1.0), clipped).detach()) == pytest.approx(expected, abs=1e-6)


def test_the_actors_actions_stay_in_their_bound() -> None:
    actor = TanhActor(3, 2, (8,), 10.0, 2.5)  # a large last layer: saturated
    actions = actor(100 * torch.randn(64, 3))
    assert actions.abs().max() <= 2.5 and actions.abs().max() > 2.0


def test_the_target_actions_noise_is_clipped_and_the_action_bounded() -> None:
    """policy_noise 10 with noise_clip 0.3 on an actor at ~0: every target action within +-0.3,
    most at the clip; with action_bound 0.2 the bound clips first."""
    actor = TanhActor(2, 3, (4,), 1e-6, 1.0)
    obs = torch.randn(1000, 2)
    actions = target_actions(actor, obs, TD3Cfg(policy_noise=10.0, noise_clip=0.3), torch.Generator())
    assert actions.abs().max() <= 0.3 + 1e-4 and (actions.abs() > 0.29).float().mean() > 0.9
    bounded = target_actions(actor, obs, TD3Cfg(policy_noise=10.0, noise_clip=0.3, action_bound=0.2), torch.Generator())
    assert bounded.abs().max() <= 0.2 + 1e-4
