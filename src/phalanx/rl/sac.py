"""FastSAC (Seo et al., 2025): a tanh-squashed Gaussian actor whose entropy the return rewards
at a temperature alpha, tuned toward a target entropy; its critics are FastTD3's distributional
ones (`phalanx.rl.critics`), where the entropy bonus shifts every target atom alike.

The losses are pure functions of tensors (`log_prob`, `entropy_reward`, `actor_loss`,
`alpha_loss`), checked against hand computation in tests/rl/test_sac_math.py.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional

from phalanx.rl.adam import check_adam_state
from phalanx.rl.critics import TwinCritic, critic_loss
from phalanx.rl.models import mlp
from phalanx.rl.off_policy_learner import OffPolicyLearner

if TYPE_CHECKING:
    from phalanx.rl.off_policy_cfg import SACCfg


class SquashedGaussianActor(nn.Module):
    """obs -> a Gaussian over pre-squash actions u (mean and log std, the log std squashed into
    [log_std_min, log_std_max]); the action is action_bound * tanh(u). `forward` gives the
    deterministic action (tanh of the mean: what play and export run), `sample` a random one and
    its log-probability. The last layer starts small (`init_scale`)."""

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden: tuple[int, ...],
        init_scale: float,
        bound: float,
        log_std_range: tuple[float, float],
    ):
        super().__init__()
        self.net = mlp(obs_dim, hidden, 2 * action_dim, "relu")
        last = self.net[-1]
        nn.init.normal_(last.weight, 0.0, init_scale)
        nn.init.zeros_(last.bias)
        self.bound, self.log_std_range = bound, log_std_range

    def distribution(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The pre-squash mean and log standard deviation, each (batch, action_dim), in float32."""
        mean, raw = self.net(obs).float().chunk(2, dim=-1)
        low, high = self.log_std_range
        return mean, low + 0.5 * (high - low) * (torch.tanh(raw) + 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.bound * torch.tanh(self.distribution(obs)[0])

    def sample(self, obs: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A reparameterized action (batch, action_dim), its log-probability (batch,) and the
        distribution's log standard deviation (batch, action_dim)."""
        mean, log_std = self.distribution(obs)
        eps = torch.randn(mean.shape, device=mean.device, generator=generator)
        u = mean + log_std.exp() * eps
        return self.bound * torch.tanh(u), log_prob(u, eps, log_std, self.bound), log_std


def log_prob(u: torch.Tensor, eps: torch.Tensor, log_std: torch.Tensor, bound: float) -> torch.Tensor:
    """log p(a) of a = bound * tanh(u), u = mean + std * eps ~ N(mean, std): the Gaussian's
    log-density at u minus log |da/du| = log bound + log(1 - tanh(u)^2), summed over actions;
    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) keeps it finite for large |u|. (batch,)"""
    gaussian = -0.5 * eps.square() - log_std - 0.5 * math.log(2 * math.pi)
    squash = math.log(bound) + 2 * (math.log(2) - u - functional.softplus(-2 * u))
    return (gaussian - squash).sum(dim=-1)


def entropy_reward(batch: dict, alpha: torch.Tensor, next_log_prob: torch.Tensor) -> torch.Tensor:
    """The reward through which the critics learn the soft return: r - bootstrap * discount *
    alpha * log pi(a'|s') (each target atom r + gamma^n (z - alpha log pi) is r' + gamma^n z)."""
    return batch["reward"] - batch["bootstrap"] * batch["discount"] * alpha * next_log_prob


def actor_loss(
    critic: TwinCritic, actions: torch.Tensor, log_probs: torch.Tensor, obs: torch.Tensor, alpha, clipped: bool
) -> torch.Tensor:
    """alpha log pi(a|s) - Q(s, a) for the actor's sampled actions, batch mean."""
    return (alpha * log_probs - critic.q_value(obs, actions, clipped)).mean()


def alpha_loss(log_alpha: torch.Tensor, log_probs: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """-alpha (log pi + target entropy): alpha grows while the policy's entropy (-log pi) is below
    the target and shrinks while above."""
    return -(log_alpha.exp() * (log_probs.detach() + target_entropy)).mean()


class SAC(OffPolicyLearner):
    """FastSAC's learner: the squashed Gaussian actor, the shared critics and the temperature."""

    loss_names = ("loss/critic", "loss/actor", "loss/alpha", "learner/q_target", "learner/alpha", "learner/entropy")

    cfg: SACCfg

    @staticmethod
    def make_actor(cfg: SACCfg, obs_dim: int, action_dim: int) -> SquashedGaussianActor:
        log_std_range = (cfg.log_std_min, cfg.log_std_max)
        return SquashedGaussianActor(
            obs_dim, action_dim, cfg.actor_hidden_dims, cfg.init_scale, cfg.action_bound, log_std_range
        )

    def __init__(self, *args, **kwargs):
        """`OffPolicyLearner`'s arguments, with a `SACCfg`."""
        super().__init__(*args, **kwargs)
        self.log_alpha = torch.tensor(math.log(self.cfg.alpha_init), device=self.device, requires_grad=True)
        self.alpha_optimizer = torch.optim.Adam(
            [self.log_alpha], lr=self.cfg.alpha_learning_rate, capturable=self.capturable
        )
        self.target_entropy = self.cfg.target_entropy_per_action * self.action_dim
        self._std = torch.zeros((), device=self.device)  # the last acting step's mean standard deviation

    def exploration_std(self) -> torch.Tensor:
        """The pre-squash standard deviation of the last actions taken, averaged."""
        return self._std

    @torch.no_grad()
    def act(self, obs: torch.Tensor, explore: bool = True) -> torch.Tensor:
        """Sampled actions (num_envs, action_dim) when exploring, else the deterministic ones."""
        obs = self.obs_norm(obs)
        if not explore:
            return self.actor(obs)
        actions, _, log_std = self.actor.sample(obs, self.generator)
        self._std.copy_(log_std.exp().mean())
        return actions

    def update(self, batch: dict, actor_turn: bool) -> dict[str, torch.Tensor]:
        """One critic update on `batch` (normalized here); on the actor's turn also the actor's
        and the temperature's; then the target critics' soft update."""
        cfg, batch = self.cfg, self.normalized(batch)
        alpha = self.log_alpha.detach().exp()
        with self.precision():
            with torch.no_grad():
                next_actions, next_log_prob, _ = self.actor.sample(batch["next_obs"]["policy"], self.generator)
            reward = entropy_reward(batch, alpha, next_log_prob)
            loss, target_value = critic_loss(
                self.critic, self.target_critic, batch, next_actions, reward, cfg.clipped_double_q
            )
        self.step(self.critic_optimizer, self.critic, loss)
        out = {"loss/critic": loss.detach(), "learner/q_target": target_value, "learner/alpha": alpha}
        if actor_turn:
            obs = batch["obs"]
            with self.precision():
                actions, log_probs, _ = self.actor.sample(obs["policy"], self.generator)
                a_loss = actor_loss(self.critic, actions, log_probs, obs["critic"], alpha, cfg.clipped_double_q)
            self.step(self.actor_optimizer, self.actor, a_loss)
            t_loss = alpha_loss(self.log_alpha, log_probs, self.target_entropy)
            self.alpha_optimizer.zero_grad(set_to_none=True)
            t_loss.backward()
            self.dist.average_gradients([self.log_alpha], self._no_extra)
            self.alpha_optimizer.step()
            out |= {"loss/actor": a_loss.detach(), "loss/alpha": t_loss.detach()}
            out["learner/entropy"] = -log_probs.detach().mean()
        self.update_targets()
        return out

    def state_dict(self) -> dict[str, Any]:
        return super().state_dict() | {
            "log_alpha": self.log_alpha.detach(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_adam_state(state["alpha_optimizer"], [self.log_alpha])  # before anything is loaded, as the critics'
        super().load_state_dict(state)
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
