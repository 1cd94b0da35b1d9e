"""Statistics of the episodes that end during a rollout, and the env's log scalars, summed on
the device and read once per iteration."""

from __future__ import annotations

from typing import Any

import torch


class EpisodeStats:
    """Sums over the rollout's ended episodes: their count, returns, lengths, reward-term sums
    (`reward_terms/NAME`) and metrics (`metrics/NAME`); and the env's "log" scalars as of the
    rollout's last step (`env/NAME`)."""

    def __init__(self, reward_names: list[str], metric_names: list[str], device: torch.device):
        per_episode = [*(f"reward_terms/{n}" for n in reward_names), *(f"metrics/{n}" for n in metric_names)]
        self.names = ["episodes", "return", "length", *per_episode]
        self.sums = torch.zeros(len(self.names), device=device)
        self.log_names: list[str] = []
        self.log = torch.zeros(0, device=device)

    def add(self, episode: dict[str, Any]) -> None:
        """Adds the episodes of one env step's `extras["episode"]` that ended."""
        done = episode["done"].float()
        columns = [done, episode["return"], episode["length"].float(), *episode["terms"].values()]
        columns += episode["metrics"].values()
        self.sums += (torch.stack(columns, dim=1) * done[:, None]).sum(dim=0)

    def keep_log(self, log: dict[str, torch.Tensor]) -> None:
        """Keeps the env's log scalars (sized on the first, eager call)."""
        if not log:
            return
        if self.log_names != list(log):
            self.log_names, self.log = list(log), torch.zeros(len(log), device=self.sums.device)
        self.log.copy_(torch.stack([value.float() for value in log.values()]))

    @staticmethod
    def episode_means(summed: dict[str, float], last: dict[str, float]) -> dict[str, float]:
        """mean_reward and mean_episode_length of the ended episodes in `summed` (host values of
        `names`); `last` when none ended."""
        if summed["episodes"] <= 0:
            return last
        return {
            "mean_reward": summed["return"] / summed["episodes"],
            "mean_episode_length": summed["length"] / summed["episodes"],
        }

    @staticmethod
    def per_episode(summed: dict[str, float]) -> dict[str, float]:
        """The reward terms and metrics of `summed` per ended episode (nothing when none ended)."""
        if summed["episodes"] <= 0:
            return {}
        return {k: v / summed["episodes"] for k, v in summed.items() if k.startswith(("reward_terms/", "metrics/"))}
