"""The off-policy training loop (`phalanx train TASK --algo td3|sac`): every env step of every env
goes into a replay buffer on the device, and each is followed by gradient updates on batches
drawn from it. The run itself (run directory, logging, stop signals, checkpoints, metrics) is
the PPO trainer's; an iteration is `num_steps_per_env` env steps and their updates.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from phalanx.core.errors import ConfigError
from phalanx.core.vec_env import VecEnv
from phalanx.dist import DistContext, Progress
from phalanx.rl.models import critic_group
from phalanx.rl.off_policy_cfg import OffPolicyCfg, TD3Cfg
from phalanx.rl.replay import ReplayBuffer
from phalanx.rl.sac import SAC
from phalanx.rl.td3 import TD3
from phalanx.training.cfg import TrainCfg
from phalanx.training.checkpoint import load_weights, save_checkpoint
from phalanx.training.timing import IntervalTimer, phase_range
from phalanx.training.trainer import Trainer, rollout_graphs, to_device, update_capture


class OffPolicyTrainer(Trainer):
    """Trains with FastTD3 or FastSAC (`cfg.algo`, a `TD3Cfg` or a `SACCfg`) on any `VecEnv`
    whose observations are vectors, on one device or, as one rank of a torchrun job, on each
    rank's (every rank collects into its own buffer; `OffPolicyLearner` keeps the networks alike).
    Checkpoints hold the learner and every rank's envs; with `algo.checkpoint_buffer` each rank
    also writes its replay buffer beside them, and a resumed run continues exactly."""

    def __init__(
        self,
        cfg: TrainCfg,
        env: VecEnv,
        run_dir: Path | None,
        console: Console | None = None,
        dist: DistContext | None = None,
        progress: Progress | None = None,
    ):
        self._begin(cfg, env, run_dir, console, dist, progress)
        algo: OffPolicyCfg = cfg.algo
        # "policy": the actor's group, "critic": the critics' (the env's "critic" group, or "policy" again).
        self._groups = {"policy": "policy", "critic": critic_group(env.observation_spec)}
        spec = {key: tuple(env.observation_spec[group]) for key, group in self._groups.items()}
        for group, shape in spec.items():
            if len(shape) != 1:
                raise ConfigError(f"learns from vector observations; group {group!r} has shape {shape}", "algo")
        # The buffer keeps each of the env's groups once: an env without a critic group stores "policy" alone.
        stored = {key: spec[key] for key, group in self._groups.items() if key == "policy" or group != "policy"}
        _check_memory(ReplayBuffer.bytes_needed(algo.buffer_size, env.num_envs, stored, env.action_dim), env.device)
        torch.manual_seed(cfg.seed)  # the networks' initial weights
        self.learner = (TD3 if isinstance(algo, TD3Cfg) else SAC)(
            algo,
            spec["policy"][0],
            spec["critic"][0],
            env.action_dim,
            env.num_envs,
            env.device,
            self.generator,
            cfg.empirical_normalization,
            self.dist,
            bf16=cfg.bf16_update and env.device.type == "cuda",
            capture=update_capture(cfg, env.device),
        )
        self.buffer = ReplayBuffer(algo.buffer_size, env.num_envs, stored, env.action_dim, env.device)
        self.graphs = rollout_graphs(cfg, env, self.generator)
        # What every iteration logs beside the losses (made once: no copy to the device per iteration).
        self._constant_logs = {
            "learning_rate": torch.tensor(algo.actor_learning_rate, device=env.device),
            "skipped_updates": torch.zeros((), device=env.device),
        }
        # The acting and storing graphs' static inputs: each of the env's groups before and after a step.
        read = set(self._groups.values())
        self._obs_in = {group: env.obs[group].clone() for group in read}
        self._next_in = {group: env.obs[group].clone() for group in read}

    @property
    def policy(self) -> torch.nn.Module:
        return self.learner.actor

    def release_graphs(self) -> None:
        """Drops the acting and storing graphs and the learner's captured updates."""
        self.graphs.clear()
        self.learner.release_graphs()

    def _learn(self, step_timer: IntervalTimer, collect_timer: IntervalTimer) -> dict[str, torch.Tensor]:
        """`num_steps_per_env` env steps, each stored and followed by `updates_per_step` updates
        once `learning_starts` steps are in; returns the iteration's mean of each of the
        learner's losses (over the updates that computed it). With rollout capture the acting
        before each `env.step` and the storing after it replay CUDA graphs of their own
        (recorded in the second iteration), the env step the env's graph between them."""
        algo: OffPolicyCfg = self.cfg.algo
        self.learner.reset_losses()
        env_obs = self.env.obs
        last = self.cfg.num_steps_per_env - 1
        for t in range(self.cfg.num_steps_per_env):
            self.progress.tick()
            collect_timer.begin()
            _copy_in(self._obs_in, env_obs)
            actions = self.graphs.run(("act",), self._act)
            step_timer.begin()
            with phase_range("env_step", self.profiling):
                env_obs, reward, terminated, truncated, extras = self.env.step(actions)
            step_timer.end()
            _copy_in(self._next_in, env_obs)
            self.graphs.run(
                ("store", t == last), self._store, actions, reward, terminated, truncated, extras, t == last
            )
            self.buffer.advance()
            collect_timer.end()
            if self.watch is not None:
                self.watch.step(t)
            if self.buffer.size <= max(algo.learning_starts, algo.n_step - 1):
                continue
            with phase_range("off_policy_update", self.profiling):
                for _ in range(algo.updates_per_step):
                    self.learner.learn(self.buffer)
        self.graphs.warm()
        means = self.learner.loss_sums / self.learner.loss_counts.clamp_min(1)
        losses = dict(zip(self.learner.loss_names, means, strict=True))
        return losses | self._constant_logs

    def _act(self) -> torch.Tensor:
        """The step's observations join the normalizers; the exploring actions for them."""
        obs = {key: self._obs_in[group] for key, group in self._groups.items()}
        self.learner.observe(obs)
        return self.learner.act(obs["policy"])

    def _store(self, actions, reward, terminated, truncated, extras: dict[str, Any], last: bool) -> None:
        """The step into the replay buffer (the episode's final observations where one ended),
        new exploration for the envs whose episode ended, and the episode statistics."""
        done = terminated | truncated
        final = extras["final_obs"]
        ended = {group: torch.where(done[:, None], final[group], self._next_in[group]) for group in self._next_in}
        obs = {key: self._obs_in[group] for key, group in self._groups.items()}
        next_obs = {key: ended[group] for key, group in self._groups.items()}
        self.buffer.write(obs, actions, reward, next_obs, terminated, truncated)
        self.learner.resample_noise(done)
        self.stats.add(extras["episode"])
        if last:
            self.stats.keep_log(extras["log"])

    def _action_std(self) -> torch.Tensor:
        """The learner's exploration standard deviation."""
        return self.learner.exploration_std()

    def _learner_state(self) -> dict[str, Any]:
        """The actor as "policy" and the whole learner as "off_policy" (the replay buffers: `save`)."""
        return {
            "policy": self.learner.actor.state_dict(),
            "obs_norm": self.learner.obs_norm.state_dict(),
            "off_policy": self.learner.state_dict(),
        }

    def _load_learner(self, state: dict[str, Any]) -> None:
        load_weights(self.learner.actor, state["policy"], "--resume: the actor")
        self.learner.load_state_dict(state["off_policy"])

    def _rank_learner_state(self) -> dict[str, Any]:
        return {"exploration": self.learner.rank_state()}

    def _load_rank_learner_state(self, own: dict[str, Any]) -> None:
        self.learner.load_rank_state(to_device(own["exploration"], self.device))

    def save(self) -> None:
        """With `algo.checkpoint_buffer`, each rank first writes its replay buffer (and the
        iteration it belongs to) beside the checkpoint; then the checkpoint, as PPO's."""
        if self.saves and self.cfg.algo.checkpoint_buffer:
            self.progress.enter("saving the replay buffer", slow=True)
            path = buffer_file(Path(self.cfg.run_dir) / "checkpoints" / "model_last.pt", self.dist.rank)
            path.parent.mkdir(parents=True, exist_ok=True)
            save_checkpoint(path, {"iteration": self.iteration, "buffer": self.buffer.state_dict()})
        super().save()

    def load_buffer(self, checkpoint: Path) -> None:
        """After resuming from `checkpoint`: every rank's replay buffer saved with it; where any
        rank has none of that iteration (none saved, a save cut short, a job with more ranks),
        every rank starts with an empty buffer, so that all ranks update in step, and says that
        the run does not continue exactly. The file is read on the CPU, memory-mapped, and copied
        into the buffer: the device never holds two copies."""
        path = buffer_file(checkpoint, self.dist.rank)
        saved = torch.load(path, map_location="cpu", mmap=True, weights_only=True) if path.is_file() else None
        fits = saved is not None and saved["iteration"] == self.iteration
        everywhere = self.dist.spread(int(fits), self.device)[0] == 1
        if everywhere:
            self.buffer.load_state_dict(saved["buffer"])
            return
        self.buffer.clear()
        if saved is None:
            why = "none was saved"
        elif not fits:
            why = f"{path.name} is of iteration {saved['iteration']}"
        else:
            why = "another rank's is missing"
        self.console.print(
            f"[yellow]warning:[/yellow] resumed without the replay buffers (rank {self.dist.rank}: {why}; "
            "--algo.checkpoint-buffer saves them): they refill first, so the run does not continue exactly"
        )


def _copy_in(static: dict[str, torch.Tensor], obs: dict[str, torch.Tensor]) -> None:
    """The env's observations into the graphs' static inputs."""
    for group, value in static.items():
        value.copy_(obs[group])


def buffer_file(checkpoint: Path, rank: int) -> Path:
    """Where rank `rank`'s replay buffer of the run's last checkpoint lies: beside it."""
    return checkpoint.parent / f"replay_last.rank{rank}.pt"


def _check_memory(needed: int, device: torch.device) -> None:
    """Refuses a replay buffer larger than the device's free memory (`algo.buffer_size` names the fix)."""
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
    else:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if needed > free:
        raise ConfigError(
            f"the replay buffer needs {needed / 2**30:.1f} GiB, {device} has {free / 2**30:.1f} GiB free; "
            "lower it (env steps per env) or --num-envs",
            "algo.buffer_size",
        )
