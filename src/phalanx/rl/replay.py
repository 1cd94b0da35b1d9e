"""A replay buffer on the device for off-policy learning from many parallel envs, with n-step
returns drawn at sampling time.

Each env keeps its own ring of its last `capacity` transitions, written all envs at once, one
env step at a time: shape of each stored field (capacity, num_envs, ...). The write position and
fill level move on by one per env step twice: on the device in `write` (where it and `sample`
index), and on the host in `advance` (what the trainer decides by and a checkpoint keeps). So
neither reads the device, and a CUDA graph that recorded `write` or `sample` writes and draws
where the buffer stands at each replay, not where it stood at the recording.
"""

from __future__ import annotations

import torch

from phalanx.core.errors import ConfigError


class ReplayBuffer:
    """The transitions (obs, action, reward, next obs, terminated, truncated) of `num_envs`
    envs; obs and next obs are dicts of observation groups with the shapes of `obs_spec`."""

    def __init__(
        self,
        capacity: int,
        num_envs: int,
        obs_spec: dict[str, tuple[int, ...]],
        action_dim: int,
        device: torch.device,
    ):
        self.capacity, self.num_envs, self.device = capacity, num_envs, device
        ring = (capacity, num_envs)
        self.obs = {g: torch.zeros(*ring, *shape, device=device) for g, shape in obs_spec.items()}
        self.next_obs = {g: torch.zeros(*ring, *shape, device=device) for g, shape in obs_spec.items()}
        self.actions = torch.zeros(*ring, action_dim, device=device)
        self.rewards = torch.zeros(ring, device=device)
        self.terminated = torch.zeros(ring, dtype=torch.bool, device=device)
        self.truncated = torch.zeros(ring, dtype=torch.bool, device=device)
        self.pos = 0  # the ring index the next `write` writes
        self.size = 0  # how many env steps each ring holds
        self._at = torch.zeros(1, dtype=torch.long, device=device)  # pos, on the device
        self._filled = torch.zeros((), dtype=torch.long, device=device)  # size, on the device

    @staticmethod
    def bytes_needed(capacity: int, num_envs: int, obs_spec: dict[str, tuple[int, ...]], action_dim: int) -> int:
        """The device memory the buffer's tensors take (float32 obs twice, actions, rewards, flags)."""
        floats = 2 * sum(_numel(shape) for shape in obs_spec.values()) + action_dim + 1
        return capacity * num_envs * (4 * floats + 2)

    def write(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        next_obs: dict[str, torch.Tensor],
        terminated: torch.Tensor,
        truncated: torch.Tensor,
    ) -> None:
        """Stores one env step of every env, overwriting each ring's oldest once full. `next_obs`
        is what the step led to: for an env whose episode ended, its episode's final observation
        (not the next episode's first). Device work only (a CUDA graph may record it); the host's
        count of the steps stored moves on in `advance`."""
        for group, store in self.obs.items():
            self._put(store, obs[group])
            self._put(self.next_obs[group], next_obs[group])
        self._put(self.actions, actions)
        self._put(self.rewards, rewards)
        self._put(self.terminated, terminated)
        self._put(self.truncated, truncated)
        self._at.add_(1).remainder_(self.capacity)
        self._filled.add_(1).clamp_(max=self.capacity)

    def advance(self) -> None:
        """Counts one `write` on the host (its write position and fill level)."""
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def _put(self, store: torch.Tensor, value: torch.Tensor) -> None:
        """value, one env step of every env, into `store`'s ring slot at the device's write position."""
        store.index_copy_(0, self._at, value.to(store.dtype)[None])

    def sample(
        self, batch_size: int, n_step: int, gamma: float, generator: torch.Generator
    ) -> dict[str, torch.Tensor | dict[str, torch.Tensor]]:
        """`batch_size` n-step transitions drawn uniformly over envs and stored steps that have
        `n_step` steps after them in their ring. Each sums the rewards of up to `n_step` steps,
        discounted, stopping after the step where its episode ended (terminated or truncated):

            reward = sum_k gamma^k r_{t+k},  k < n_eff;   discount = gamma^n_eff
            next_obs = the next obs of step t + n_eff - 1;   bootstrap = not terminated there

        (a truncated episode bootstraps from its final observation). Shapes: obs, next_obs
        groups (batch, ...); actions (batch, action_dim); reward, discount, bootstrap (batch,)."""
        if self.size < n_step:
            raise ConfigError(f"the buffer holds {self.size} steps per env, fewer than n_step = {n_step}")
        oldest = (self._at[0] - self._filled) % self.capacity
        # Uniform over the starts that have n_step steps after them: a float in [0, 1) scaled by
        # their count (a device scalar) and floored, the last clamped against rounding up.
        count = self._filled - (n_step - 1)
        scaled = torch.rand(batch_size, device=self.device, generator=generator) * count
        starts = torch.minimum(scaled.long(), count - 1)
        start = (oldest + starts) % self.capacity
        env = torch.randint(0, self.num_envs, (batch_size,), device=self.device, generator=generator)
        reward = torch.zeros(batch_size, device=self.device)
        alive = torch.ones(batch_size, device=self.device)  # the episode has not ended before step k
        steps = torch.zeros(batch_size, dtype=torch.long, device=self.device)
        terminal = torch.zeros(batch_size, device=self.device)
        for k in range(n_step):
            index = (start + k) % self.capacity
            reward += gamma**k * alive * self.rewards[index, env]
            steps += alive.long()
            terminal += alive * self.terminated[index, env].float()
            alive = alive * (~(self.terminated[index, env] | self.truncated[index, env])).float()
        last = (start + steps - 1) % self.capacity
        return {
            "obs": {g: store[start, env] for g, store in self.obs.items()},
            "actions": self.actions[start, env],
            "reward": reward,
            "next_obs": {g: store[last, env] for g, store in self.next_obs.items()},
            "bootstrap": 1.0 - terminal,
            "discount": gamma ** steps.float(),
        }

    def clear(self) -> None:
        """Forgets every stored step: the next `write` writes each ring's first slot."""
        self.pos = self.size = 0
        self._at.zero_()
        self._filled.zero_()

    def state_dict(self) -> dict[str, object]:
        """Everything stored, for an exact resume (as large as the buffer)."""
        return {
            "obs": self.obs,
            "next_obs": self.next_obs,
            "actions": self.actions,
            "rewards": self.rewards,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "pos": self.pos,
            "size": self.size,
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        for name in ("obs", "next_obs"):
            for group, store in getattr(self, name).items():
                store.copy_(state[name][group])
        for name in ("actions", "rewards", "terminated", "truncated"):
            getattr(self, name).copy_(state[name])
        self.pos, self.size = int(state["pos"]), int(state["size"])
        self._at.fill_(self.pos)
        self._filled.fill_(self.size)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
