"""What an off-policy learner (FastTD3, FastSAC) holds beside its actor: two distributional
critics and their targets, AdamW for both networks, the observation normalizers; and how it
steps an optimizer and moves the targets. The learners (`phalanx.rl.td3`, `phalanx.rl.sac`)
add their actor, exploration and losses."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from phalanx.core.errors import ConfigError
from phalanx.dist import DistContext
from phalanx.rl.adam import check_adam_state
from phalanx.rl.critics import TwinCritic
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.rl.replay import ReplayBuffer
from phalanx.rl.rollout_graphs import StagedGraphs

if TYPE_CHECKING:
    from phalanx.rl.off_policy_cfg import OffPolicyCfg


class OffPolicyLearner:
    """The shared part; `make_actor`, `update(batch, actor_turn)` and `act(obs, explore)` are each
    learner's. `loss_names`: the keys `update` may return (an update returns those it computed).
    With several ranks (`dist`), each learns from its own envs' buffer: the networks start as rank
    0's, every gradient is averaged over ranks before its step and the normalizers merge every
    rank's observations, so the networks stay alike on every rank. With `bf16` the update's
    network passes run under bfloat16 autocast (`precision`). With `capture` (CUDA) `learn`
    replays each kind of update (the critics' alone, or with the actor's) from a CUDA graph,
    batch drawing included, once each kind has run eagerly."""

    loss_names: tuple[str, ...] = ()

    def __init__(
        self,
        cfg: OffPolicyCfg,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        num_envs: int,
        device: torch.device,
        generator: torch.Generator,
        normalize: bool,
        dist: DistContext | None = None,
        bf16: bool = False,
        capture: bool = False,
    ):
        if capture and device.type != "cuda":
            raise ConfigError(f"capture_update: CUDA graph capture needs a CUDA device, got {device}")
        self.cfg, self.device, self.generator, self.bf16 = cfg, device, generator, bf16
        self.action_dim, self.num_envs = action_dim, num_envs
        self.dist = dist or DistContext()
        self.actor = self.make_actor(cfg, obs_dim, action_dim).to(device)
        critic = TwinCritic(critic_obs_dim, action_dim, cfg.critic_hidden_dims, cfg.v_min, cfg.v_max, cfg.num_atoms)
        self.critic = critic.to(device)
        self.dist.broadcast_module(self.actor)
        self.dist.broadcast_module(self.critic)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        # Capturable on every CUDA run, captured or not: the step count stays on the device (a graph
        # can step, the host never waits), and captured and eager training do the same arithmetic.
        self.capturable = device.type == "cuda"
        adamw = {"weight_decay": cfg.weight_decay, "capturable": self.capturable}
        self.actor_optimizer = torch.optim.AdamW(self.actor.parameters(), lr=cfg.actor_learning_rate, **adamw)
        self.critic_optimizer = torch.optim.AdamW(self.critic.parameters(), lr=cfg.critic_learning_rate, **adamw)
        self.obs_norm = EmpiricalNormalizer(obs_dim).to(device) if normalize else nn.Identity()
        self.critic_norm = EmpiricalNormalizer(critic_obs_dim).to(device) if normalize else nn.Identity()
        self.updates = 0  # critic updates so far (a host count: it picks the actor's turns)
        self._no_extra = torch.zeros(0, device=device)  # nothing rides along the gradients' all-reduce
        self.capture = capture
        self._graphs = StagedGraphs(capture, generator)
        # Each loss's sum and count over the updates since `reset_losses` (`learn` adds to them).
        self.loss_sums = torch.zeros(len(self.loss_names), device=device)
        self.loss_counts = torch.zeros(len(self.loss_names), device=device)

    @staticmethod
    def make_actor(cfg: OffPolicyCfg, obs_dim: int, action_dim: int) -> nn.Module:
        """The learner's actor for `cfg` (also what play and export rebuild from a checkpoint)."""
        raise NotImplementedError

    def resample_noise(self, envs: torch.Tensor) -> None:
        """Called with the mask (num_envs,) of envs whose episode just ended; a learner whose
        exploration is per episode draws it anew there."""

    def rank_state(self) -> dict[str, Any]:
        """The state of this rank's own exploration (its envs'), apart from the learner's, which
        every rank shares."""
        return {}

    def load_rank_state(self, state: dict[str, Any]) -> None:
        """`rank_state`'s back in place."""

    def exploration_std(self) -> torch.Tensor:
        """The exploration's standard deviation, averaged over envs and actions (a device scalar)."""
        raise NotImplementedError

    @torch.no_grad()
    def observe(self, obs: dict[str, torch.Tensor]) -> None:
        """Folds one env step's observations ("policy", "critic") of every rank into the
        normalizers' statistics (one sum over ranks for both)."""
        norms = [
            (n, g)
            for n, g in ((self.obs_norm, "policy"), (self.critic_norm, "critic"))
            if isinstance(n, EmpiricalNormalizer)
        ]
        for norm, group in norms:
            norm.accumulate(obs[group])
        if self.dist.active and norms:
            pending = self.dist.sum_(torch.cat([norm.pending for norm, _ in norms]))
            for norm, part in zip(
                (n for n, _ in norms), pending.split([n.pending.numel() for n, _ in norms]), strict=True
            ):
                norm.pending.copy_(part)
        for norm, _ in norms:
            norm.commit()

    def normalized(self, batch: dict) -> dict:
        """`batch` with its obs and next obs normalized ("policy": the actor's statistics, "critic": the critics')."""
        norms = {"policy": self.obs_norm, "critic": self.critic_norm}
        out = dict(batch)
        for key in ("obs", "next_obs"):
            out[key] = {g: norms[g](x) for g, x in batch[key].items()}
        return out

    def precision(self) -> torch.autocast:
        """Where the update's network passes run: under bfloat16 autocast with `bf16` (the losses
        and the optimizers stay float32), else in float32."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)

    def step(self, optimizer: torch.optim.Optimizer, module: nn.Module, loss: torch.Tensor) -> None:
        """One optimizer step on `loss`, its gradient averaged over ranks and clipped to
        `max_grad_norm` where set."""
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.dist.average_gradients(list(module.parameters()), self._no_extra)
        if self.cfg.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(module.parameters(), self.cfg.max_grad_norm)
        optimizer.step()

    def learn(self, buffer: ReplayBuffer) -> None:
        """One update on a batch of `cfg.batch_size` n-step transitions drawn from `buffer`: the
        critics', and every `policy_delay`-th also the actor's; its losses join `loss_sums` and
        `loss_counts`. With `capture` each kind is recorded at its first call after both kinds
        have run eagerly (their optimizers' state exists then) and replayed from then on."""
        self.updates += 1
        actor_turn = self.updates % self.cfg.policy_delay == 0
        if self.updates > self.cfg.policy_delay:
            self._graphs.warm()
        self._graphs.run(actor_turn, self._learn, buffer, actor_turn)

    def _learn(self, buffer: ReplayBuffer, actor_turn: bool) -> None:
        cfg = self.cfg
        batch = buffer.sample(cfg.batch_size, cfg.n_step, cfg.gamma, self.generator)
        for key in ("obs", "next_obs"):  # the critics read the policy group where the env has no other
            batch[key].setdefault("critic", batch[key]["policy"])
        for name, value in self.update(batch, actor_turn).items():
            i = self.loss_names.index(name)
            self.loss_sums[i] += value
            self.loss_counts[i] += 1

    def reset_losses(self) -> None:
        self.loss_sums.zero_()
        self.loss_counts.zero_()

    def release_graphs(self) -> None:
        """Drops the captured updates (NCCL keeps a communicator whose collectives a graph holds)."""
        self._graphs.clear()

    @torch.no_grad()
    def update_targets(self) -> None:
        """target <- tau * critic + (1 - tau) * target."""
        target, online = list(self.target_critic.parameters()), list(self.critic.parameters())
        torch._foreach_lerp_(target, online, self.cfg.tau)

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "obs_norm": self.obs_norm.state_dict(),
            "critic_norm": self.critic_norm.state_dict(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in ("actor_optimizer", "critic_optimizer"):
            check_adam_state(state[name], [p for group in getattr(self, name).param_groups for p in group["params"]])
        for name in ("actor", "critic", "target_critic", "actor_optimizer", "critic_optimizer"):
            getattr(self, name).load_state_dict(state[name])
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.critic_norm.load_state_dict(state["critic_norm"])
        self.updates = int(state["updates"])
