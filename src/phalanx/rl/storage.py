"""Rollout storage preallocated on the device, and generalized advantage estimation."""

from __future__ import annotations

import torch
import warp as wp

from phalanx.core.warp_streams import launch


@wp.kernel(enable_backward=False)
def _gae(
    rewards: wp.array2d(dtype=wp.float32),
    values: wp.array2d(dtype=wp.float32),
    dones: wp.array2d(dtype=wp.float32),
    last_values: wp.array(dtype=wp.float32),
    gamma: float,
    lam: float,
    advantages: wp.array2d(dtype=wp.float32),
    returns: wp.array2d(dtype=wp.float32),
):
    """Env i's advantages and returns, from its last step back to its first."""
    i = wp.tid()
    steps = rewards.shape[0]
    next_value = last_values[i]
    next_advantage = wp.float32(0.0)
    for k in range(steps):
        t = steps - 1 - k
        not_done = 1.0 - dones[t, i]
        delta = rewards[t, i] + gamma * next_value * not_done - values[t, i]
        next_advantage = delta + gamma * lam * not_done * next_advantage
        advantages[t, i] = next_advantage
        returns[t, i] = next_advantage + values[t, i]
        next_value = values[t, i]


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    lam: float,
    advantages: torch.Tensor,
    returns: torch.Tensor,
) -> None:
    """Advantages and returns over a rollout, written into `advantages` and `returns` (T, N),
    which may be strided views. Shapes: (T, N) for rewards, values, dones (float 0/1, the episode
    ended after step t); (N,) for last_values, V(s_T) of the observation after the last step.
    Time-out bootstrapping is already folded into the rewards. One Warp thread per env runs the
    recursion (in torch, launches would cost more than the arithmetic) on torch's current stream;
    the first call loads its module, which a CUDA graph must not record (PPO's first rollout is eager).

    delta_t = r_t + gamma * V_{t+1} * (1 - d_t) - V_t
    A_t     = delta_t + gamma * lam * (1 - d_t) * A_{t+1}
    R_t     = A_t + V_t"""
    inputs = [rewards, values, dones, last_values, gamma, lam]
    launch(_gae, rewards.shape[1], inputs, [advantages, returns], rewards.device)


class RolloutStorage:
    """T steps x N envs of transitions, written in place step by step (no allocation per step).

    What the update samples (observations, actions, the policy's outputs, advantages, returns)
    lives side by side in one (T, N, width) tensor, `samples`; each field is a view of its
    columns. An epoch of the update then shuffles the rollout with one gather, and its minibatches
    are row ranges. `critic_obs` is the `obs` view when the critic sees the policy's observations;
    `image_targets` (with `image_target_dim`) holds what the image encoder learns to predict;
    `teacher_actions` (with `teacher_actions`) what a teacher did in each state, for a student.
    Images (with `image_shape`) keep their own dtype, uint8 for RGB, in `images` (T, N, H, W, C),
    gathered per minibatch: as float columns of `samples` they would take 4x the memory.
    """

    SCALARS = ("log_probs", "values", "advantages", "returns")
    """Fields of one value per transition: views without the trailing width 1."""

    obs: torch.Tensor  # normalized, as the policy saw it
    critic_obs: torch.Tensor
    actions: torch.Tensor
    action_mean: torch.Tensor
    action_std: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    def __init__(
        self,
        steps: int,
        num_envs: int,
        obs_dim: int,
        critic_obs_dim: int | None,
        action_dim: int,
        device: torch.device,
        image_shape: tuple[int, ...] | None = None,
        image_dtype: torch.dtype = torch.uint8,
        image_target_dim: int | None = None,
        teacher_actions: bool = False,
    ):
        widths = {"obs": obs_dim} | ({"critic_obs": critic_obs_dim} if critic_obs_dim is not None else {})
        widths |= {"image_targets": image_target_dim} if image_target_dim is not None else {}
        widths |= {"actions": action_dim, "action_mean": action_dim, "action_std": action_dim}
        widths |= {"teacher_actions": action_dim} if teacher_actions else {}
        widths |= dict.fromkeys(self.SCALARS, 1)
        self.steps, self.num_envs = steps, num_envs
        self.samples = torch.zeros(steps, num_envs, sum(widths.values()), device=device)
        self.columns: dict[str, slice] = {}
        start = 0
        for name, width in widths.items():
            self.columns[name] = slice(start, start + width)
            start += width
        self.columns.setdefault("critic_obs", self.columns["obs"])
        for name, view in self.fields(self.samples).items():
            setattr(self, name, view)
        self.rewards = torch.zeros(steps, num_envs, device=device)  # with time-out bootstrapping folded in
        self.dones = torch.zeros(steps, num_envs, device=device)
        self.images = None
        if image_shape is not None:
            self.images = torch.zeros(steps, num_envs, *image_shape, dtype=image_dtype, device=device)

    def fields(self, samples: torch.Tensor) -> dict[str, torch.Tensor]:
        """Each field's view of `samples` (..., width): `self.samples` or rows gathered from it."""
        views = {name: samples[..., cols] for name, cols in self.columns.items()}
        return {name: view.squeeze(-1) if name in self.SCALARS else view for name, view in views.items()}

    def shuffled(self, order: torch.Tensor) -> torch.Tensor:
        """The T * N transitions' samples (T * N, width) in `order`."""
        return self.samples.view(self.steps * self.num_envs, -1)[order]

    def images_at(self, rows: torch.Tensor) -> torch.Tensor:
        """The images (len(rows), H, W, C) of transitions `rows` (indices into T * N)."""
        return self.images.flatten(0, 1)[rows]
