"""FastTD3 (Seo et al., 2025): a deterministic tanh actor and two distributional critics
learning from a replay buffer on the device while thousands of envs explore, each with a noise
scale of its own drawn at its episode's start.

The losses are pure functions of tensors (`target_actions`, `actor_loss`; the critics' in
`phalanx.rl.critics`), checked against hand computation in tests/rl/test_td3_math.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from phalanx.rl.critics import TwinCritic, critic_loss
from phalanx.rl.models import mlp
from phalanx.rl.off_policy_learner import OffPolicyLearner

if TYPE_CHECKING:
    from phalanx.rl.off_policy_cfg import TD3Cfg


class TanhActor(nn.Module):
    """obs -> action_bound * tanh(MLP(obs)); the last layer starts small (`init_scale`)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...], init_scale: float, bound: float):
        super().__init__()
        self.net = mlp(obs_dim, hidden, action_dim, "relu")
        last = self.net[-1]
        nn.init.normal_(last.weight, 0.0, init_scale)
        nn.init.zeros_(last.bias)
        self.bound = bound

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.bound * torch.tanh(self.net(obs))


def target_actions(actor: TanhActor, next_obs: torch.Tensor, cfg: TD3Cfg, generator: torch.Generator) -> torch.Tensor:
    """The critics' target action: the actor's at the next obs plus Gaussian noise of standard
    deviation `policy_noise` clipped to +-`noise_clip`, within the action bound (target policy smoothing)."""
    actions = actor(next_obs)
    noise = torch.randn(actions.shape, device=actions.device, generator=generator)
    noise = (noise * cfg.policy_noise).clamp(-cfg.noise_clip, cfg.noise_clip)
    return (actions + noise).clamp(-cfg.action_bound, cfg.action_bound)


def actor_loss(critic: TwinCritic, actor: TanhActor, batch: dict, clipped_double_q: bool) -> torch.Tensor:
    """-Q(s, actor(s)): the smaller (clipped double Q) or the mean of the critics' expected values."""
    return -critic.q_value(batch["obs"]["critic"], actor(batch["obs"]["policy"]), clipped_double_q).mean()


class TD3(OffPolicyLearner):
    """FastTD3's learner: the tanh actor, the shared critics, and each env's exploration noise scale."""

    loss_names = ("loss/critic", "loss/actor", "learner/q_target")

    cfg: TD3Cfg

    @staticmethod
    def make_actor(cfg: TD3Cfg, obs_dim: int, action_dim: int) -> TanhActor:
        return TanhActor(obs_dim, action_dim, cfg.actor_hidden_dims, cfg.init_scale, cfg.action_bound)

    def __init__(self, *args, **kwargs):
        """`OffPolicyLearner`'s arguments, with a `TD3Cfg`."""
        super().__init__(*args, **kwargs)
        self.noise_std = torch.empty(self.num_envs, 1, device=self.device)
        self.resample_noise(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))

    def resample_noise(self, envs: torch.Tensor) -> None:
        """A new exploration noise scale, uniform in [std_min, std_max], for the envs of mask `envs` (num_envs,)."""
        fresh = torch.rand(self.noise_std.shape, device=self.device, generator=self.generator)
        fresh = self.cfg.std_min + (self.cfg.std_max - self.cfg.std_min) * fresh
        self.noise_std.copy_(torch.where(envs[:, None], fresh, self.noise_std))

    def exploration_std(self) -> torch.Tensor:
        return self.noise_std.mean()

    @torch.no_grad()
    def act(self, obs: torch.Tensor, explore: bool = True) -> torch.Tensor:
        """Actions (num_envs, action_dim) for the policy observations `obs`, with each env's noise when exploring."""
        actions = self.actor(self.obs_norm(obs))
        if explore:
            noise = torch.randn(actions.shape, device=self.device, generator=self.generator) * self.noise_std
            actions = (actions + noise).clamp(-self.cfg.action_bound, self.cfg.action_bound)
        return actions

    def update(self, batch: dict, actor_turn: bool) -> dict[str, torch.Tensor]:
        """One critic update on `batch` (normalized here), the actor's too on its turn, and the
        target critics' soft update. Returns the losses as device tensors."""
        cfg, batch = self.cfg, self.normalized(batch)
        with self.precision():
            with torch.no_grad():
                next_actions = target_actions(self.actor, batch["next_obs"]["policy"], cfg, self.generator).float()
            loss, target_value = critic_loss(
                self.critic, self.target_critic, batch, next_actions, batch["reward"], cfg.clipped_double_q
            )
        self.step(self.critic_optimizer, self.critic, loss)
        out = {"loss/critic": loss.detach(), "learner/q_target": target_value}
        if actor_turn:
            with self.precision():
                a_loss = actor_loss(self.critic, self.actor, batch, cfg.clipped_double_q)
            self.step(self.actor_optimizer, self.actor, a_loss)
            out["loss/actor"] = a_loss.detach()
        self.update_targets()
        return out

    def rank_state(self) -> dict[str, Any]:
        """Each env's exploration noise scale."""
        return {"noise_std": self.noise_std}

    def load_rank_state(self, state: dict[str, Any]) -> None:
        self.noise_std.copy_(state["noise_std"])
