"""FastSAC's pieces against independent references and hand computation: the squashed Gaussian's
log-probability (against torch.distributions), the entropy bonus in the critics' reward, the
actor's and the temperature's losses."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import AffineTransform, TanhTransform

from helpers import constant_critic
from phalanx.rl.sac import SquashedGaussianActor, actor_loss, alpha_loss, entropy_reward, log_prob


@pytest.mark.parametrize("bound", [1.0, 2.5])
def test_log_prob_is_the_squashed_gaussians(bound: float) -> None:
    """Against torch's tanh-then-scale transformed Normal, also far in the tails (|u| up to 8)."""
    torch.manual_seed(0)
    mean, log_std = 3 * torch.randn(256, 4), torch.empty(256, 4).uniform_(-2, 1)
    eps = torch.randn(256, 4)
    u = mean + log_std.exp() * eps
    u = u.clamp(-8, 8)
    eps = (u - mean) / log_std.exp()
    reference = TransformedDistribution(
        Normal(mean.double(), log_std.exp().double()), [TanhTransform(), AffineTransform(0.0, bound)]
    )
    keep = u.abs() < 5  # where torch's own tanh inverse is still exact in float64
    expected = reference.log_prob(bound * torch.tanh(u.double()))
    got = log_prob(u, eps, log_std, bound)
    rows = keep.all(dim=1)
    torch.testing.assert_close(got[rows].double(), expected.sum(dim=1)[rows], rtol=1e-4, atol=1e-4)
    assert torch.isfinite(got).all(), "finite where 1 - tanh(u)^2 rounds to 0"


def test_the_entropy_bonus_shifts_the_reward_where_the_episode_goes_on() -> None:
    """r - bootstrap * gamma^n * alpha * log pi: 1 - 0.9 * 0.5 * (-2) = 1.9; ended: 1."""
    batch = {
        "reward": torch.tensor([1.0, 1.0]),
        "bootstrap": torch.tensor([1.0, 0.0]),
        "discount": torch.tensor([0.9, 0.9]),
    }
    got = entropy_reward(batch, torch.tensor(0.5), torch.tensor([-2.0, -2.0]))
    torch.testing.assert_close(got, torch.tensor([1.9, 1.0]))


def test_the_temperature_falls_while_the_entropy_is_above_its_target() -> None:
    """alpha 0.5, log pi -1 and -3 (entropy 2), target entropy -2: loss -0.5 * mean(-3, -5) = 2,
    d loss / d log alpha = 2 > 0, so a descent step lowers alpha."""
    log_alpha = torch.tensor(math.log(0.5), requires_grad=True)
    loss = alpha_loss(log_alpha, torch.tensor([-1.0, -3.0]), -2.0)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(2.0) and float(log_alpha.grad) == pytest.approx(2.0)


@pytest.mark.parametrize(("clipped", "expected"), [(True, 0.45), (False, 0.2)])
def test_actor_loss_is_the_entropy_cost_minus_the_critics_value(clipped: bool, expected: float) -> None:
    """Critics valued 0.25 and -0.25 (softmax [1/4, 1/4, 1/2] and [1/2, 1/4, 1/4] on [-1, 0, 1]);
    alpha 0.1, log pi 1 and 3: mean(0.1 log pi) = 0.2, minus -0.25 (the smaller) or 0 (the mean)."""
    critic = constant_critic([0.0, 0.0, math.log(2)], [math.log(2), 0.0, 0.0])
    loss = actor_loss(critic, torch.zeros(2, 1), torch.tensor([1.0, 3.0]), torch.randn(2, 2), 0.1, clipped)
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)


def test_the_actors_actions_and_log_std_stay_in_their_ranges() -> None:
    actor = SquashedGaussianActor(3, 2, (8,), 10.0, 2.5, (-5.0, 2.0))  # a large last layer: saturated
    obs = 100 * torch.randn(64, 3)
    _, log_std = actor.distribution(obs)
    assert log_std.min() >= -5.0 and log_std.max() <= 2.0
    actions, log_probs, _ = actor.sample(obs, torch.Generator().manual_seed(0))
    assert actions.abs().max() <= 2.5 and actor(obs).abs().max() <= 2.5
    assert torch.isfinite(log_probs).all()


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_a_bfloat16_update_follows_the_float32_one(algo: str) -> None:
    """The same learner and batch under bfloat16 autocast (on the CPU here; on CUDA in training)
    and in float32: float32 losses within bfloat16's rounding (8 mantissa bits) of each other."""
    from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg
    from phalanx.rl.sac import SAC
    from phalanx.rl.td3 import TD3

    cfg = (TD3Cfg if algo == "td3" else SACCfg)(actor_hidden_dims=(32,), critic_hidden_dims=(32,))
    batch = {
        "obs": {"policy": torch.randn(256, 5), "critic": torch.randn(256, 5)},
        "next_obs": {"policy": torch.randn(256, 5), "critic": torch.randn(256, 5)},
        "actions": torch.rand(256, 2) * 2 - 1,
        "reward": torch.randn(256),
        "bootstrap": torch.ones(256),
        "discount": torch.full((256,), 0.99),
    }
    losses = []
    for bf16 in (False, True):
        torch.manual_seed(0)
        learner = (TD3 if algo == "td3" else SAC)(
            cfg, 5, 5, 2, 4, torch.device("cpu"), torch.Generator(), False, bf16=bf16
        )
        with learner.precision():
            hidden = learner.critic.q1[0](torch.randn(3, 7))
        assert hidden.dtype == (torch.bfloat16 if bf16 else torch.float32), "the passes run in bfloat16"
        losses.append(learner.update(batch, actor_turn=True))
    for name, value in losses[0].items():
        assert losses[1][name].dtype == torch.float32, name
        torch.testing.assert_close(losses[1][name], value, rtol=3e-2, atol=3e-2, msg=name)
