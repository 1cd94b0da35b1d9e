"""`MeteredEnv`: a phalanx env that measures itself while another RL library trains on it, so that
every trainer's run directory gets the same metrics.jsonl rows as phalanx's own.

Every `steps_per_iteration` steps the library takes make one iteration (its rollout, then its
update). CUDA events time, with no host sync inside a rollout, `env.step` alone (fps_step), the
rollout from its first step to the end of its last (fps_step_inference) and one rollout's first
step to the next one's (fps_total). A row is written when the next iteration starts (one host
sync), the last one by `finish`. Under torchrun each rank meters its own envs and a row holds all
ranks' figures (one all-reduce per iteration: fps and episodes summed, env logs averaged); each
step counts as progress for the stall watchdog."""

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
        """The library's policy std (a device tensor of its action dimensions), once an adapter
        hands it over (`watch_action_std`); each row then holds its mean."""

    def watch_action_std(self, std: Callable[[], torch.Tensor]) -> None:
        """Logs the mean of `std()`, the library policy's action std, with each row (`VecEnv.watch_action_std`)."""
        self.action_std = std

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
