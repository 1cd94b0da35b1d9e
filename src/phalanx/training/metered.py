"""`MeteredEnv`: a phalanx env that measures itself while another RL library trains on it, so that
every trainer's run directory gets the same metrics.jsonl rows as phalanx's own (fps_step,
fps_step_inference, fps_total, episode returns, lengths, reward terms, metrics, env logs).

The library steps the env; every `steps_per_iteration` steps make one iteration (the library's
rollout, then its update). The meter times, with CUDA events and no host sync inside a rollout:
- fps_step: env steps / the time inside `env.step`;
- fps_step_inference: env steps / the time from the start of the rollout's first step to the end
  of its last (steps, and the library's inference and bookkeeping between them);
- fps_total: env steps / the time from one rollout's first step to the next one's (the update
  included).
An iteration's row is written when the next one starts (one host sync per iteration), the last
one when training ends (`finish`). Under torchrun each rank meters its own envs and the row holds
the figures of all ranks (fps and episode counts summed, as phalanx's trainer reports them; env
logs averaged): one all-reduce per iteration on the process group the library joined, and each
step counts as progress for the stall watchdog (the first iteration as a slow phase: the
library's and the env's compiles)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from phalanx.dist import DistContext, Progress
from phalanx.envs.task_env import TaskEnv
from phalanx.training.episode_stats import EpisodeStats
from phalanx.training.logger import RunLogger
from phalanx.training.timing import FPS_NAMES, IntervalTimer


class MeteredEnv:
    """`env` with a metered `step`; every other attribute is the env's own."""

    def __init__(
        self,
        env: TaskEnv,
        steps_per_iteration: int,
        logger: RunLogger,
        max_iterations: int,
        dist: DistContext | None = None,
        progress: Progress | None = None,
    ):
        self.env, self.steps_per_iteration = env, steps_per_iteration
        self.dist = dist or DistContext()
        self.progress = progress or Progress()
        self.logger, self.max_iterations = logger, max_iterations
        self.stats = EpisodeStats(env.reward_names, env.metric_names, env.device)
        self.iteration = 0
        self.frames = 0
        self.elapsed_s = 0.0
        self.last_episode: dict[str, float] = {}  # mean_reward, mean_episode_length once an episode ended
        self._steps = 0  # steps of the current iteration
        self._start = 0.0
        self._timers: tuple[IntervalTimer, IntervalTimer] | None = None
        self.action_std: Callable[[], torch.Tensor] | None = None
        """The library's policy std (a device tensor of its action dimensions); the adapters set it
        (`watch_action_std`) once the policy exists, and each row then holds its mean."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, actions: torch.Tensor):
        if self._steps == self.steps_per_iteration:
            self._log_iteration()
        if self._steps == 0:
            self._begin_iteration()
        self.progress.tick()  # on entering a step: a rank blocked inside it has counted it
        step_timer, collect_timer = self._timers
        step_timer.begin()
        out = self.env.step(actions)
        step_timer.end()
        extras = out[4]
        self.stats.add(extras["episode"])
        self._steps += 1
        if self._steps == self.steps_per_iteration:
            collect_timer.end()
            self.stats.keep_log(extras["log"])
        return out

    def finish(self) -> None:
        """Logs the last iteration, if its rollout is complete (the library's update has run)."""
        if self._steps == self.steps_per_iteration:
            self._log_iteration()

    def _begin_iteration(self) -> None:
        self.progress.enter(f"iteration {self.iteration}", slow=self.iteration == 0)
        if self.env.device.type == "cuda":
            torch.cuda.synchronize(self.env.device)
        self._start = time.perf_counter()
        self._timers = (IntervalTimer(self.env.device), IntervalTimer(self.env.device))
        self._timers[1].begin()
        self.stats.sums.zero_()

    def _log_iteration(self) -> None:
        step_s, collect_s = (timer.seconds() for timer in self._timers)  # syncs once
        total_s = time.perf_counter() - self._start
        frames = self.steps_per_iteration * self.env.num_envs
        self.frames += frames * self.dist.world_size
        self.elapsed_s += total_s
        env_log = [f"env/{name}" for name in self.stats.log_names]
        means = [*env_log, *(["action_std"] if self.action_std is not None else [])]
        names = [*self.stats.names, *means, "invalid_env_resets", "nonfinite_actions", *FPS_NAMES]
        rates = torch.tensor([frames / step_s, frames / collect_s, frames / total_s], device=self.env.device)
        std = [] if self.action_std is None else [self.action_std().detach().float().mean()[None]]
        counts = torch.stack([self.env.invalid_resets.float(), self.env.nonfinite_actions.float()])
        values = torch.cat([self.stats.sums, self.stats.log, *std, counts, rates])
        # Over ranks: sums (fps included, as phalanx's trainer reports them), env logs and the std averaged.
        summed = dict(zip(names, self.dist.sum_(values).tolist(), strict=True))
        for name in means:
            summed[name] /= self.dist.world_size
        self.last_episode = self.stats.episode_means(summed, self.last_episode)
        metrics = {
            "iteration": self.iteration,
            "frames": self.frames,
            "time_s": self.elapsed_s,
            **{name: summed[name] for name in FPS_NAMES},
            **self.last_episode,
            "episodes": int(summed["episodes"]),
            "invalid_env_resets": int(summed["invalid_env_resets"]),
            "nonfinite_actions": int(summed["nonfinite_actions"]),
            **({"action_std": summed["action_std"]} if self.action_std is not None else {}),
            **{k: v for k, v in summed.items() if k.startswith("env/")},
            **self.stats.per_episode(summed),
        }
        self.logger.log(metrics)
        self.logger.console.print(self.logger.line(metrics, self.max_iterations))
        self.iteration += 1
        self._steps = 0


def watch_action_std(env: Any, std: Callable[[], torch.Tensor]) -> None:
    """Has a `MeteredEnv` log the mean of `std()` (the library policy's action std) with each row;
    an adapter calls it on the env it was given, which may also be a plain env (nothing to do)."""
    if isinstance(env, MeteredEnv):
        env.action_std = std
