"""FastTD3 (Seo et al., 2025): a deterministic tanh actor, two distributional (C51) critics and
their targets, learning from a replay buffer on the device while thousands of envs explore, each
with its own noise scale.

The losses are pure functions of tensors (`project`, `critic_loss`, `actor_loss`), checked
against hand computation in tests/rl/test_td3_math.py; `TD3` holds the networks, optimizers and
exploration state and runs an update without reading the device on the host.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional

from phalanx.rl.models import mlp
from phalanx.rl.normalizer import EmpiricalNormalizer

if TYPE_CHECKING:
    from phalanx.rl.cfg import TD3Cfg


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


class TwinCritic(nn.Module):
    """Two critics (obs, action) -> logits over the return support `support` (num_atoms,)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...], v_min: float, v_max: float, atoms: int):
        super().__init__()
        self.q1 = mlp(obs_dim + action_dim, hidden, atoms, "relu")
        self.q2 = mlp(obs_dim + action_dim, hidden, atoms, "relu")
        self.register_buffer("support", torch.linspace(v_min, v_max, atoms))

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, actions], dim=-1)
        return self.q1(x), self.q2(x)

    def value(self, logits: torch.Tensor) -> torch.Tensor:
        """The expected return of a distribution's logits (batch, atoms) -> (batch,)."""
        return (functional.softmax(logits, dim=-1) * self.support).sum(dim=-1)


def project(
    probs: torch.Tensor, support: torch.Tensor, reward: torch.Tensor, bootstrap: torch.Tensor, discount: torch.Tensor
) -> torch.Tensor:
    """The categorical projection of C51: the distribution `probs` (batch, atoms) over `support`
    (atoms,), shifted to reward + bootstrap * discount * z and clamped to the support, spread back
    onto its atoms (each moved atom splits its mass between the two nearest, by distance).
    Shape: (batch, atoms); each row sums to 1."""
    atoms = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (atoms - 1)
    target = (reward[:, None] + (bootstrap * discount)[:, None] * support).clamp(v_min, v_max)
    b = (target - v_min) / delta  # the moved atom's position in atoms, in [0, atoms - 1]
    lower, upper = b.floor().long(), b.ceil().long()
    # On an atom exactly (lower == upper) the whole mass goes to it: widen the pair by one.
    on_atom = lower == upper
    lower = torch.where(on_atom & (upper > 0), lower - 1, lower)
    upper = torch.where(on_atom & (lower == upper), upper + 1, upper)
    out = torch.zeros_like(probs)
    out.scatter_add_(1, lower, probs * (upper.float() - b))
    out.scatter_add_(1, upper, probs * (b - lower.float()))
    return out


def critic_loss(
    critic: TwinCritic,
    target_critic: TwinCritic,
    actor: TanhActor,
    batch: dict,
    cfg: TD3Cfg,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both critics' cross-entropy to the projected target distribution. The target action is the
    actor's at the next obs plus clipped noise (target policy smoothing); with clipped double Q
    both learn the target critic whose expected value is smaller. `batch`: `ReplayBuffer.sample`'s,
    with obs already normalized ("policy": the actor's group, "critic": the critics'). Returns
    the loss and the target's mean value."""
    with torch.no_grad():
        next_actions = actor(batch["next_obs"]["policy"])
        noise = torch.randn(next_actions.shape, device=next_actions.device, generator=generator)
        noise = (noise * cfg.policy_noise).clamp(-cfg.noise_clip, cfg.noise_clip)
        next_actions = (next_actions + noise).clamp(-cfg.action_bound, cfg.action_bound)
        logits1, logits2 = target_critic(batch["next_obs"]["critic"], next_actions)
        support = target_critic.support
        args = (support, batch["reward"], batch["bootstrap"], batch["discount"])
        target1, target2 = (
            project(functional.softmax(logits1, -1), *args),
            project(functional.softmax(logits2, -1), *args),
        )
        value1, value2 = (target1 * support).sum(-1), (target2 * support).sum(-1)
        if cfg.clipped_double_q:
            target1 = target2 = torch.where((value1 < value2)[:, None], target1, target2)
    q1, q2 = critic(batch["obs"]["critic"], batch["actions"])
    # Cross-entropy H(target, q) = -sum_z target(z) log softmax(q)(z), per critic, batch mean.
    loss = (
        -(target1 * functional.log_softmax(q1, -1)).sum(-1).mean()
        - (target2 * functional.log_softmax(q2, -1)).sum(-1).mean()
    )
    return loss, torch.minimum(value1, value2).mean()


def actor_loss(critic: TwinCritic, actor: TanhActor, batch: dict, clipped_double_q: bool) -> torch.Tensor:
    """-Q(s, actor(s)): the smaller (clipped double Q) or the mean of the critics' expected values."""
    q1, q2 = critic(batch["obs"]["critic"], actor(batch["obs"]["policy"]))
    v1, v2 = critic.value(q1), critic.value(q2)
    return -(torch.minimum(v1, v2) if clipped_double_q else (v1 + v2) / 2).mean()


class TD3:
    """The learner: actor, critics, target critics, their AdamW optimizers, the observation
    normalizers and each env's exploration noise scale."""

    def __init__(
        self,
        cfg: TD3Cfg,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        num_envs: int,
        device: torch.device,
        generator: torch.Generator,
        normalize: bool,
    ):
        self.cfg, self.device, self.generator = cfg, device, generator
        self.actor = TanhActor(obs_dim, action_dim, cfg.actor_hidden_dims, cfg.init_scale, cfg.action_bound).to(device)
        critic = TwinCritic(critic_obs_dim, action_dim, cfg.critic_hidden_dims, cfg.v_min, cfg.v_max, cfg.num_atoms).to(
            device
        )
        self.critic, self.target_critic = critic, copy.deepcopy(critic).requires_grad_(False)
        self.actor_optimizer = torch.optim.AdamW(
            self.actor.parameters(), lr=cfg.actor_learning_rate, weight_decay=cfg.weight_decay
        )
        self.critic_optimizer = torch.optim.AdamW(
            self.critic.parameters(), lr=cfg.critic_learning_rate, weight_decay=cfg.weight_decay
        )
        self.obs_norm = EmpiricalNormalizer(obs_dim).to(device) if normalize else nn.Identity()
        self.critic_norm = EmpiricalNormalizer(critic_obs_dim).to(device) if normalize else nn.Identity()
        self.noise_std = torch.empty(num_envs, 1, device=device)
        self.resample_noise(torch.ones(num_envs, dtype=torch.bool, device=device))
        self.updates = 0  # critic updates so far (host count: it picks the actor's turns)

    def resample_noise(self, envs: torch.Tensor) -> None:
        """A new exploration noise scale, uniform in [std_min, std_max], for the envs of mask `envs` (num_envs,)."""
        fresh = torch.rand(self.noise_std.shape, device=self.device, generator=self.generator)
        fresh = self.cfg.std_min + (self.cfg.std_max - self.cfg.std_min) * fresh
        self.noise_std.copy_(torch.where(envs[:, None], fresh, self.noise_std))

    @torch.no_grad()
    def observe(self, obs: dict[str, torch.Tensor]) -> None:
        """Folds one env step's observations into the normalizers' statistics."""
        for norm, group in ((self.obs_norm, "policy"), (self.critic_norm, "critic")):
            if isinstance(norm, EmpiricalNormalizer):
                norm.accumulate(obs[group])
                norm.commit()

    @torch.no_grad()
    def act(self, obs: torch.Tensor, explore: bool = True) -> torch.Tensor:
        """Actions (num_envs, action_dim) for the policy observations `obs`, with each env's noise when exploring."""
        actions = self.actor(self.obs_norm(obs))
        if explore:
            noise = torch.randn(actions.shape, device=self.device, generator=self.generator) * self.noise_std
            actions = (actions + noise).clamp(-self.cfg.action_bound, self.cfg.action_bound)
        return actions

    def normalized(self, batch: dict) -> dict:
        """`batch` with its obs and next obs normalized ("policy": the actor's statistics, "critic": the critics')."""
        norms = {"policy": self.obs_norm, "critic": self.critic_norm}
        out = dict(batch)
        for key in ("obs", "next_obs"):
            out[key] = {g: norms[g](x) for g, x in batch[key].items()}
        return out

    def update(self, batch: dict) -> dict[str, torch.Tensor]:
        """One critic update on `batch` (normalized here), the actor's every `policy_delay`-th, and
        the target critics' soft update. Returns the losses as device tensors."""
        batch = self.normalized(batch)
        loss, target_value = critic_loss(self.critic, self.target_critic, self.actor, batch, self.cfg, self.generator)
        _step(self.critic_optimizer, self.critic, loss, self.cfg.max_grad_norm)
        out = {"loss/critic": loss.detach(), "q_target": target_value}
        self.updates += 1
        if self.updates % self.cfg.policy_delay == 0:
            a_loss = actor_loss(self.critic, self.actor, batch, self.cfg.clipped_double_q)
            _step(self.actor_optimizer, self.actor, a_loss, self.cfg.max_grad_norm)
            out["loss/actor"] = a_loss.detach()
        with torch.no_grad():  # target <- tau * critic + (1 - tau) * target
            target, online = list(self.target_critic.parameters()), list(self.critic.parameters())
            torch._foreach_lerp_(target, online, self.cfg.tau)
        return out

    def state_dict(self) -> dict:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "obs_norm": self.obs_norm.state_dict(),
            "critic_norm": self.critic_norm.state_dict(),
            "noise_std": self.noise_std,
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        for name in ("actor", "critic", "target_critic", "actor_optimizer", "critic_optimizer"):
            getattr(self, name).load_state_dict(state[name])
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.critic_norm.load_state_dict(state["critic_norm"])
        self.noise_std.copy_(state["noise_std"])
        self.updates = int(state["updates"])


def _step(optimizer: torch.optim.Optimizer, module: nn.Module, loss: torch.Tensor, max_grad_norm: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm > 0:
        nn.utils.clip_grad_norm_(module.parameters(), max_grad_norm)
    optimizer.step()
