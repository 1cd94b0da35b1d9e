"""Rollout storage preallocated on the device, and generalized advantage estimation."""

from __future__ import annotations

import torch


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns over a rollout. Shapes: (T, N) for rewards, values, dones (float
    0/1, the episode ended after step t); (N,) for last_values, V(s_T) of the observation after
    the last step. Time-out bootstrapping is already folded into the rewards.

    delta_t = r_t + gamma * V_{t+1} * (1 - d_t) - V_t
    A_t     = delta_t + gamma * lam * (1 - d_t) * A_{t+1}
    R_t     = A_t + V_t
    """
    steps = rewards.shape[0]
    advantages = torch.empty_like(rewards)
    next_advantage = torch.zeros_like(last_values)
    next_value = last_values
    for t in reversed(range(steps)):
        not_done = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * not_done - values[t]
        next_advantage = delta + gamma * lam * not_done * next_advantage
        advantages[t] = next_advantage
        next_value = values[t]
    return advantages, advantages + values


class RolloutStorage:
    """T steps x N envs of transitions, written in place step by step (no allocation per step)."""

    def __init__(self, steps: int, num_envs: int, obs_dim: int, critic_obs_dim: int, action_dim: int, device):
        def zeros(*shape: int) -> torch.Tensor:
            return torch.zeros(steps, num_envs, *shape, device=device)

        self.steps, self.num_envs = steps, num_envs
        self.obs = zeros(obs_dim)  # normalized, as the policy saw it
        self.critic_obs = zeros(critic_obs_dim)
        self.actions = zeros(action_dim)
        self.log_probs = zeros()
        self.values = zeros()
        self.rewards = zeros()  # with time-out bootstrapping folded in
        self.dones = zeros()
        self.action_mean = zeros(action_dim)
        self.action_std = zeros(action_dim)
        self.advantages = zeros()
        self.returns = zeros()

    def flat(self, name: str) -> torch.Tensor:
        """The field with its (T, N) leading dimensions merged: (T * N, ...)."""
        tensor = getattr(self, name)
        return tensor.reshape(self.steps * self.num_envs, *tensor.shape[2:])
