"""Proximal Policy Optimization on the device, as rsl_rl's algorithm: `act` samples actions and
stores the step, `record` stores its outcome, `compute_returns` ends the rollout, `update` learns
from it. Nothing reads device values on the host.

The learning rate is a device tensor (fused Adam takes it as one), adapted from the KL divergence
as rsl_rl does; a minibatch whose loss or gradient is not finite is skipped through the
optimizer's `found_inf` flag. Losses and statistics accumulate on the device; the trainer reads
them once per iteration.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from phalanx.core.compiling import compiled
from phalanx.core.errors import ConfigError
from phalanx.dist import DistContext
from phalanx.rl.adam import FusedAdam
from phalanx.rl.cfg import DistillCfg, PPOCfg
from phalanx.rl.gaussian import DiagonalGaussian
from phalanx.rl.loss_kernels import PPOLossKernel, after_backward
from phalanx.rl.losses import gaussian_kl, surrogate_loss, value_loss
from phalanx.rl.models import ActorCritic, critic_group
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.rl.storage import RolloutStorage, compute_gae

TEACHER_GROUP = "teacher"
"""The observation group a teacher acts on, computed in the student's env (`phalanx train --teacher`)."""


def _in_matmul_precision(method: Callable[..., Any]) -> Callable[..., Any]:
    """Runs a PPO method with cuBLAS's float32 matrix products at the PPO's `matmul_precision`
    ("tf32" or "ieee"), then puts the setting back: the env's own products keep theirs. A CUDA
    graph captured within keeps the kernels chosen at capture."""

    @functools.wraps(method)
    def run(self: PPO, *args: Any, **kwargs: Any) -> Any:
        matmul = torch.backends.cuda.matmul
        saved, matmul.fp32_precision = matmul.fp32_precision, self.matmul_precision
        try:
            return method(self, *args, **kwargs)
        finally:
            matmul.fp32_precision = saved

    return run


class PPO:
    """Learns an `ActorCritic` from rollouts of `num_steps` x `num_envs` transitions it stores itself.
    With `normalize`, observations go through empirical normalizers (the policy group's, and a
    privileged "critic" group's if any), fixed during a rollout and updated in `compute_returns`.

    `capture` (CUDA only) records the whole update as one CUDA graph after an eager warm-up update
    and replays it; `tf32` runs the networks' float32 matrix products on TF32 tensor cores;
    `bf16_update` runs the update's network passes under bfloat16 autocast (losses and optimizer stay
    float32); `compile_update` compiles the minibatch losses with torch.compile (`compile_losses`
    earlier: `phalanx.rl.update_compile`). With `distill`, the policy first imitates `teacher` (a
    module from `TEACHER_GROUP` observations to actions; DAgger, `DistillCfg`), then PPO fine-tunes it.
    """

    TERMS = ("surrogate", "value", "entropy", "kl")
    """The loss terms `update` reports, in the order `_minibatch_losses` stacks them (`terms`:
    these, then "distill" with a teacher, then "image_targets" with image targets)."""

    def __init__(
        self,
        policy: ActorCritic,
        cfg: PPOCfg,
        observation_spec: dict[str, tuple[int, ...]],
        num_envs: int,
        num_steps: int,
        normalize: bool,
        generator: torch.Generator,
        capture: bool = False,
        dist: DistContext | None = None,
        tf32: bool = False,
        bf16_update: bool = False,
        compile_update: bool = False,
        image_group: str | None = None,
        image_dtype: torch.dtype = torch.uint8,
        image_targets: str | None = None,
        image_target_coef: float = 1.0,
        distill: DistillCfg | None = None,
        teacher: nn.Module | None = None,
    ):
        cfg.check()
        device = next(policy.parameters()).device
        self.policy, self.cfg, self.device, self.generator = policy, cfg, device, generator
        self.dist = dist or DistContext()
        self.critic_group = critic_group(observation_spec)
        obs_dim, critic_dim = observation_spec["policy"][0], observation_spec[self.critic_group][0]
        self.normalize = normalize
        self.obs_norm = EmpiricalNormalizer(obs_dim).to(device)
        # Without a privileged critic group the critic sees the policy observations: one normalizer.
        separate = self.critic_group != "policy"
        self.critic_norm = EmpiricalNormalizer(critic_dim).to(device) if separate else self.obs_norm
        action_dim = policy.log_std.shape[0]
        self.image_group = image_group  # the policy's encoders read it, stored as it comes
        image_shape = None if image_group is None else observation_spec[image_group]
        # What the actor's image encoder learns to predict (`PolicyCfg.image_targets`), and how much it weighs.
        self.image_targets, self.image_target_coef = image_targets, image_target_coef
        target_dim = None if image_targets is None else observation_spec[image_targets][0]
        self.distill, self.teacher = distill, teacher
        self.distilling = distill is not None  # from the first iteration (`begin_iteration`)
        self.teacher_share = torch.zeros((), device=device)  # DAgger's beta, set each iteration
        self.terms = self.TERMS + (("distill",) if distill is not None else ())
        self.terms += ("image_targets",) if image_targets is not None else ()
        self.storage = RolloutStorage(
            num_steps, num_envs, obs_dim, critic_dim if separate else None, action_dim, device, image_shape,
            image_dtype, target_dim, teacher_actions=distill is not None,
        )  # fmt: skip
        self.learning_rate = torch.tensor(cfg.learning_rate, device=device)
        self.optimizer = FusedAdam(policy.parameters(), lr=self.learning_rate)
        self.skipped_updates = torch.zeros((), dtype=torch.long, device=device)
        if capture and device.type != "cuda":
            raise ConfigError(f"capture_update: CUDA graph capture needs a CUDA device, got {device}")
        self.capture = capture
        self.matmul_precision = "tf32" if tf32 else "ieee"
        self.bf16_update = bf16_update and device.type == "cuda"
        self._loss_kernel = None
        if compile_update:
            self._losses = compiled(self._minibatch_losses, dynamic=False)
        elif distill is not None:  # the fused kernel computes PPO's loss alone
            self._losses = self._minibatch_losses
        else:
            self._loss_kernel = PPOLossKernel(
                device, cfg.clip_param, cfg.use_clipped_value_loss, cfg.normalize_advantages,
                cfg.value_loss_coef, cfg.entropy_coef,
            )  # fmt: skip
            self._losses = self._fused_losses
        self._graph: torch.cuda.CUDAGraph | None = None
        self._graph_out: dict[str, torch.Tensor] | None = None
        self._warm = False

    # ----------------------------------------------------------------------------- rollout

    def _normalized(self, obs: dict[str, torch.Tensor], update: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor obs, critic obs), normalized; `update` adds them to the pending statistics."""
        actor_obs, critic_obs = obs["policy"], obs[self.critic_group]
        if not self.normalize:
            return actor_obs, critic_obs
        if update:
            self.obs_norm.accumulate(actor_obs)
            if self.critic_norm is not self.obs_norm:
                self.critic_norm.accumulate(critic_obs)
        actor_obs = self.obs_norm(actor_obs)
        return actor_obs, actor_obs if self.critic_norm is self.obs_norm else self.critic_norm(critic_obs)

    def _image(self, obs: dict[str, torch.Tensor]) -> torch.Tensor | None:
        return None if self.image_group is None else obs[self.image_group]

    @torch.no_grad()
    @_in_matmul_precision
    def act(self, obs: dict[str, torch.Tensor], t: int) -> torch.Tensor:
        """Samples actions for `obs` and stores step t's observations and policy outputs."""
        storage = self.storage
        actor_obs, critic_obs = self._normalized(obs, update=True)
        image = self._image(obs)
        dist, values = self.policy.distribution_and_value(actor_obs, critic_obs, image)
        noise = torch.randn(dist.mean.shape, device=self.device, generator=self.generator)
        actions = dist.sample(noise)
        storage.obs[t] = actor_obs
        if self.critic_group != "policy":
            storage.critic_obs[t] = critic_obs
        if image is not None:
            storage.images[t] = image
        if self.image_targets is not None:
            storage.image_targets[t] = obs[self.image_targets]
        if self.distill is not None:
            taught = self.teacher(obs[TEACHER_GROUP])
            storage.teacher_actions[t] = taught
            takes = torch.rand((actions.shape[0], 1), device=self.device, generator=self.generator)
            actions = torch.where(takes < self.teacher_share, taught, actions)
        storage.actions[t] = actions
        storage.log_probs[t] = dist.log_prob(actions)
        storage.values[t] = values
        storage.action_mean[t] = dist.mean
        return actions  # the action std, the same at every step of a rollout, is stored by `compute_returns`

    @torch.no_grad()
    @_in_matmul_precision
    def record(
        self,
        t: int,
        reward: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        final_obs: dict[str, torch.Tensor],
    ) -> None:
        """Stores step t's outcome. Time-outs are not terminal: their reward gains the discounted
        value of the observation the episode ended on."""
        _, final_critic_obs = self._normalized(final_obs, update=False)
        bootstrap = self.cfg.gamma * self.policy.value(final_critic_obs, self._image(final_obs)) * truncated
        self.storage.rewards[t] = reward + bootstrap
        self.storage.dones[t] = (terminated | truncated).float()

    @torch.no_grad()
    @_in_matmul_precision
    def compute_returns(self, obs: dict[str, torch.Tensor]) -> None:
        """Advantages and returns of the stored rollout, bootstrapped from `obs` (after its last
        step). The rollout's observations then join the normalizers' statistics, in one
        collective over ranks per iteration (a merge per env step kept every rank in lockstep)."""
        storage = self.storage
        _, critic_obs = self._normalized(obs, update=False)
        last_values = self.policy.value(critic_obs, self._image(obs))
        storage.action_std.copy_(self.policy.log_std.exp().expand_as(storage.action_std))  # what every step acted with
        compute_gae(
            storage.rewards, storage.values, storage.dones, last_values.float(), self.cfg.gamma, self.cfg.lam,
            storage.advantages, storage.returns,
        )  # fmt: skip
        if self.normalize:
            self.obs_norm.commit(self.dist)
            if self.critic_norm is not self.obs_norm:
                self.critic_norm.commit(self.dist)

    # ----------------------------------------------------------------------------- update

    def state_dict(self) -> dict[str, torch.Tensor | dict]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "learning_rate": self.learning_rate.clone(),
            "skipped_updates": self.skipped_updates.clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.learning_rate.copy_(state["learning_rate"])
        self.skipped_updates.copy_(state["skipped_updates"])

    def begin_iteration(self, iteration: int) -> None:
        """Sets the teacher's share of the actions for `iteration`, and the phase: distilling
        before `DistillCfg.iterations`, PPO from then on (its update is warmed up and captured
        again: it is another computation). A learning rate that no schedule adapts (`schedule`
        fixed, or while distilling) is the config's, in a resumed run too, and so is the one PPO's
        adaptive schedule starts from after distilling."""
        if self.distill is not None:
            self.teacher_share.fill_(self.distill.teacher_share(iteration))
            distilling = iteration < self.distill.iterations
            if distilling != self.distilling:
                self.distilling = distilling
                self.release_graph()
                self._warm = False
        if self.cfg.schedule == "fixed" or (self.distill is not None and iteration <= self.distill.iterations):
            self.learning_rate.fill_(self.cfg.learning_rate)

    def update(self) -> dict[str, torch.Tensor]:
        """Epochs x minibatches of clipped PPO on the stored rollout; returns device scalars (means).

        With capture the returned tensors are the graph's static outputs (overwritten next time)."""
        if not self.capture:
            return self._update()
        if not self._warm:  # one eager update on a side stream: creates optimizer state, warms autograd
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                out = self._update()
            torch.cuda.current_stream(self.device).wait_stream(side)
            self._warm = True
            return out
        if self._graph is None:
            torch.cuda.synchronize(self.device)
            self._graph = torch.cuda.CUDAGraph()
            self._graph.register_generator_state(self.generator)
            with torch.cuda.graph(self._graph):
                self._graph_out = self._update()
        self._graph.replay()
        return self._graph_out

    def release_graph(self) -> None:
        """Drops the captured update; the next update captures it again."""
        self._graph = self._graph_out = None

    @_in_matmul_precision
    def _update(self) -> dict[str, torch.Tensor]:
        cfg, storage = self.cfg, self.storage
        total = storage.steps * storage.num_envs
        sums = torch.zeros(len(self.terms), device=self.device)
        for _ in range(cfg.num_learning_epochs):
            order = torch.randperm(total, device=self.device, generator=self.generator)
            for mb in self._minibatches(order):
                self._minibatch(mb, sums)
        means = sums / (cfg.num_learning_epochs * cfg.num_mini_batches)
        out = {f"loss/{name}": mean for name, mean in zip(self.terms, means, strict=True)}
        out["learning_rate"] = self.learning_rate.clone()
        out["skipped_updates"] = self.skipped_updates.clone()
        return out

    def _minibatches(self, order: torch.Tensor) -> Iterator[dict[str, torch.Tensor]]:
        """One epoch's minibatches: the stored transitions in `order`, cut into row ranges."""
        storage = self.storage
        batch = storage.steps * storage.num_envs // self.cfg.num_mini_batches
        shuffled = storage.shuffled(order)
        for i in range(self.cfg.num_mini_batches):
            rows = slice(i * batch, (i + 1) * batch)
            mb = storage.fields(shuffled[rows])
            if storage.images is not None:
                mb["image"] = storage.images_at(order[rows])
            yield mb

    @_in_matmul_precision
    def compile_losses(self) -> None:
        """Compiles the minibatch losses, forward and backward, on the storage's zeros cut as the
        update cuts its minibatches (the update's calls then match the compiled graphs), and leaves
        the policy as it was."""
        order = torch.arange(self.storage.steps * self.storage.num_envs, device=self.device)
        loss, _ = self._losses(next(self._minibatches(order)))
        loss.backward()
        self.optimizer.zero_grad()

    def _outputs(self, mb: dict[str, torch.Tensor]) -> tuple[DiagonalGaussian, torch.Tensor, torch.Tensor | None]:
        """The policy's action distribution, values and image-target predictions on the minibatch."""
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.bf16_update):
            return self.policy.distribution_and_value(mb["obs"], mb["critic_obs"], mb.get("image"), predict=True)

    def _minibatch_losses(self, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The minibatch's PPO loss (plus the image-target loss), and its terms (`terms`, then
        0 * loss: NaN if the loss is not finite) stacked and detached. torch's form, which
        torch.compile fuses (`_fused_losses` computes the same in few kernels, eagerly)."""
        cfg = self.cfg
        dist, values, predicted = self._outputs(mb)
        values = values.float()
        log_prob = dist.log_prob(mb["actions"])
        entropy = dist.entropy()
        advantages = mb["advantages"]
        if cfg.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        surrogate = surrogate_loss(log_prob, mb["log_probs"], advantages, cfg.clip_param)
        v_loss = value_loss(values, mb["values"], mb["returns"], cfg.clip_param, cfg.use_clipped_value_loss)
        loss = surrogate + cfg.value_loss_coef * v_loss - cfg.entropy_coef * entropy
        with torch.no_grad():
            kl = gaussian_kl(mb["action_mean"], mb["action_std"], dist.mean, dist.stddev)
        terms = torch.stack([surrogate, v_loss, entropy, kl])
        if self.distill is not None:
            imitation = (dist.mean - mb["teacher_actions"]).square().mean()
            if self.distilling:  # the student learns the teacher's actions, the critic its values
                loss = cfg.value_loss_coef * v_loss + self.distill.coef * imitation
            else:
                loss = loss + self.distill.fine_tune_coef * imitation
            terms = torch.cat((terms, imitation.detach().view(1)))
        return self._with_image_targets(loss, terms, predicted, mb)

    def _fused_losses(self, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """`_minibatch_losses` with the PPO terms and their gradient in one Warp kernel
        (`phalanx.rl.loss_kernels`): the eager update's form."""
        dist, values, predicted = self._outputs(mb)
        loss, terms = self._loss_kernel(dist.mean, dist.log_std, values, mb)
        return self._with_image_targets(loss, terms, predicted, mb)

    def _with_image_targets(
        self, loss: torch.Tensor, terms: torch.Tensor, predicted: torch.Tensor | None, mb: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The loss plus the image-target loss, if the encoder learns targets, and all `terms`
        followed by 0 * loss, detached."""
        if self.image_targets is not None:
            target_loss = (predicted.float() - mb["image_targets"]).square().mean()
            loss = loss + self.image_target_coef * target_loss
            terms = torch.cat((terms, target_loss.view(1)))
        return loss, torch.cat((terms, (0.0 * loss).view(1))).detach()

    def _minibatch(self, mb: dict[str, torch.Tensor], sums: torch.Tensor) -> None:
        """One optimizer step on the minibatch; adds its `terms` (averaged over ranks) to `sums`."""
        cfg = self.cfg
        loss, terms = self._losses(mb)
        self.optimizer.zero_grad()
        loss.backward()
        with torch.no_grad():
            # One all-reduce per minibatch carries the gradients and the terms: every rank adapts
            # the learning rate from the mean KL, sees NaN in 0 * loss if any rank's loss is not
            # finite, and so decides the same skip.
            terms = self.dist.average_gradients(list(self.policy.parameters()), terms)
        grad_norm = nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
        desired_kl = cfg.desired_kl if cfg.schedule == "adaptive" and not self.distilling else None
        optimizer = self.optimizer
        after_backward(
            terms, grad_norm, desired_kl, self.learning_rate, optimizer.found_inf, self.skipped_updates, sums
        )
        optimizer.step()  # a step with found_inf 1 leaves the policy as it was
