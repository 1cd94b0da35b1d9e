"""Proximal Policy Optimization: losses and the minibatch update, with no host sync.

The learning rate is a device tensor (fused Adam takes it as one), adapted from the KL divergence
as rsl_rl does; a minibatch whose loss or gradient is not finite is skipped through the
optimizer's `found_inf` flag. Losses and statistics accumulate on the device; the trainer reads
them once per iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from phalanx.dist import DistContext
from phalanx.errors import ConfigError, check_int, check_positive, check_range
from phalanx.rl.models import ActorCritic
from phalanx.rl.storage import RolloutStorage


@dataclass
class PPOCfg:
    """PPO hyperparameters."""

    learning_rate: float = 1e-3
    """Initial Adam learning rate."""
    schedule: str = "adaptive"
    """'adaptive': scale the learning rate by 1.5 toward `desired_kl` every minibatch; 'fixed'."""
    desired_kl: float = 0.01
    """Target KL divergence between the rollout policy and the updated one (adaptive schedule)."""
    num_learning_epochs: int = 5
    """Passes over the rollout per iteration."""
    num_mini_batches: int = 4
    """Minibatches per pass; each holds steps * num_envs / num_mini_batches transitions."""
    clip_param: float = 0.2
    """PPO ratio clip (and value clip) range."""
    gamma: float = 0.99
    """Discount factor."""
    lam: float = 0.95
    """GAE lambda."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    entropy_coef: float = 0.005
    """Weight of the entropy bonus."""
    use_clipped_value_loss: bool = True
    """Clip the value update like the policy update."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip."""
    normalize_advantages: bool = True
    """Normalize advantages per minibatch."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`algo.FIELD`), its value and what is allowed."""
        check_positive("algo.learning_rate", self.learning_rate)
        if self.schedule not in ("adaptive", "fixed"):
            raise ConfigError(f"got {self.schedule!r}; allowed: 'adaptive', 'fixed'", "algo.schedule")
        check_positive("algo.desired_kl", self.desired_kl)
        check_int("algo.num_learning_epochs", self.num_learning_epochs)
        check_int("algo.num_mini_batches", self.num_mini_batches)
        check_positive("algo.clip_param", self.clip_param)
        check_range("algo.gamma", self.gamma, 0.0, 1.0)
        check_range("algo.lam", self.lam, 0.0, 1.0)
        check_range("algo.value_loss_coef", self.value_loss_coef, low=0.0)
        check_range("algo.entropy_coef", self.entropy_coef)
        check_positive("algo.max_grad_norm", self.max_grad_norm)


def surrogate_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """Clipped surrogate: mean of max(-A r, -A clip(r, 1 - c, 1 + c)), r = exp(logp - logp_old)."""
    ratio = torch.exp(log_prob - old_log_prob)
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)).mean()


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float, clipped: bool
) -> torch.Tensor:
    """Mean squared error to the returns; clipped: max of the plain and the clipped-update error."""
    if not clipped:
        return (returns - values).square().mean()
    values_clipped = old_values + (values - old_values).clamp(-clip, clip)
    return torch.max((values - returns).square(), (values_clipped - returns).square()).mean()


def gaussian_kl(mu_old: torch.Tensor, std_old: torch.Tensor, mu: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of KL(old || new) for diagonal Gaussians, summed over action dims."""
    kl = torch.log(std / std_old) + (std_old.square() + (mu_old - mu).square()) / (2.0 * std.square()) - 0.5
    return kl.sum(dim=-1).mean()


class PPO:
    """Updates an `ActorCritic` from a `RolloutStorage`.

    With `capture` (CUDA only) the whole update — epochs, minibatch sampling, forward, backward,
    optimizer steps, learning-rate adaptation — is recorded once as a CUDA graph after one eager
    warm-up update, and replayed every iteration after that.
    """

    def __init__(
        self,
        policy: ActorCritic,
        cfg: PPOCfg,
        device: torch.device,
        generator: torch.Generator,
        capture: bool = False,
        dist: DistContext | None = None,
    ):
        cfg.check()
        self.policy, self.cfg, self.device, self.generator = policy, cfg, device, generator
        self.dist = dist or DistContext()
        self.learning_rate = torch.tensor(cfg.learning_rate, device=device)
        self.optimizer = torch.optim.Adam(
            policy.parameters(), lr=self.learning_rate, fused=True, capturable=device.type == "cuda"
        )
        self.optimizer.found_inf = torch.zeros((), device=device)  # 1: skip this step (non-finite)
        self.skipped_updates = torch.zeros((), dtype=torch.long, device=device)
        if capture and device.type != "cuda":
            raise ConfigError(f"capture_update: CUDA graph capture needs a CUDA device, got {device}")
        self.capture = capture
        self._graph: torch.cuda.CUDAGraph | None = None
        self._graph_out: dict[str, torch.Tensor] | None = None
        self._warm = False

    def state_dict(self) -> dict[str, torch.Tensor | dict]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "learning_rate": self.learning_rate.clone(),
            "skipped_updates": self.skipped_updates.clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        # Loading replaces the param group's lr tensor; point it back at the one the schedule adapts.
        self.learning_rate.copy_(state["learning_rate"])
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate
        self.skipped_updates.copy_(state["skipped_updates"])

    def update(self, storage: RolloutStorage) -> dict[str, torch.Tensor]:
        """Epochs x minibatches of clipped PPO on the rollout; returns device scalars (means).

        With capture the returned tensors are the graph's static outputs (overwritten next time)."""
        if not self.capture:
            return self._update(storage)
        if not self._warm:  # one eager update on a side stream: creates optimizer state, warms autograd
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                out = self._update(storage)
            torch.cuda.current_stream(self.device).wait_stream(side)
            self._warm = True
            return out
        if self._graph is None:
            torch.cuda.synchronize(self.device)
            self._graph = torch.cuda.CUDAGraph()
            self._graph.register_generator_state(self.generator)
            with torch.cuda.graph(self._graph):
                self._graph_out = self._update(storage)
        self._graph.replay()
        return self._graph_out

    def release_graph(self) -> None:
        """Drops the captured update; the next update captures it again."""
        self._graph = self._graph_out = None

    def _update(self, storage: RolloutStorage) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        total = storage.steps * storage.num_envs
        batch = total // cfg.num_mini_batches
        fields = ("obs", "critic_obs", "actions", "log_probs", "values", "returns", "advantages")
        data = {name: storage.flat(name) for name in (*fields, "action_mean", "action_std")}
        sums = {k: torch.zeros((), device=self.device) for k in ("surrogate", "value", "entropy", "kl")}
        for _ in range(cfg.num_learning_epochs):
            order = torch.randperm(total, device=self.device, generator=self.generator)
            for i in range(cfg.num_mini_batches):
                idx = order[i * batch : (i + 1) * batch]
                stats = self._minibatch({name: tensor[idx] for name, tensor in data.items()})
                for key, value in stats.items():
                    sums[key] += torch.nan_to_num(value.detach())  # a skipped minibatch adds 0
        n = cfg.num_learning_epochs * cfg.num_mini_batches
        out = {f"loss/{k}": v / n for k, v in sums.items()}
        out["learning_rate"] = self.learning_rate.clone()
        out["skipped_updates"] = self.skipped_updates.clone()
        return out

    def _minibatch(self, mb: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        dist = self.policy.distribution(mb["obs"])
        log_prob = dist.log_prob(mb["actions"]).sum(dim=-1)
        entropy = dist.entropy().sum(dim=-1).mean()
        values = self.policy.value(mb["critic_obs"])
        advantages = mb["advantages"]
        if cfg.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        surrogate = surrogate_loss(log_prob, mb["log_probs"], advantages, cfg.clip_param)
        v_loss = value_loss(values, mb["values"], mb["returns"], cfg.clip_param, cfg.use_clipped_value_loss)
        loss = surrogate + cfg.value_loss_coef * v_loss - cfg.entropy_coef * entropy

        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        with torch.no_grad():
            # One all-reduce per minibatch carries the gradients, the KL (every rank adapts the
            # learning rate from the mean KL) and 0 * loss (NaN on every rank if any loss is not
            # finite). Every rank then sees the same gradients and decides the same skip.
            kl = gaussian_kl(mb["action_mean"], mb["action_std"], dist.mean, dist.stddev)
            kl, loss_check = self.dist.average_gradients(
                list(self.policy.parameters()), torch.stack([kl, 0.0 * loss.detach()])
            )
        grad_norm = nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
        bad = ~(torch.isfinite(loss_check) & torch.isfinite(grad_norm))
        if cfg.schedule == "adaptive":
            # lr / 1.5 when the step overshoots the KL target by 2x, lr * 1.5 below half of it. A
            # skipped minibatch leaves it: the unchanged policy's KL of ~0 would raise it to the cap
            # (an anymal-rough run went from 1e-5 to 1e-2 over three skipped iterations and then
            # took one step of KL 7.5).
            factor = torch.where(kl > 2.0 * cfg.desired_kl, 1 / 1.5, torch.where(kl < cfg.desired_kl / 2, 1.5, 1.0))
            factor = torch.where(bad, 1.0, factor)
            self.learning_rate.copy_((self.learning_rate * factor).clamp(1e-5, 1e-2))
        self.optimizer.found_inf.copy_(bad.float())
        self.skipped_updates += bad.long()
        self.optimizer.step()
        return {"surrogate": surrogate, "value": v_loss, "entropy": entropy, "kl": kl}
