"""The PPO training loop on one device: collect, compute returns, update, log, checkpoint.

Nothing in the rollout or the update reads device values on the host. Episode statistics,
losses and counters accumulate on the device and are read once per iteration, together.
"""

from __future__ import annotations

import signal
import sys
import weakref
from pathlib import Path
from typing import Any, Protocol

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as ProgressBar

from phalanx.core.cfg_data import to_data
from phalanx.core.console import wide_console
from phalanx.core.errors import ConfigError
from phalanx.core.stops import swallowed_stop
from phalanx.core.vec_env import VecEnv
from phalanx.dist import DistContext, Progress
from phalanx.rl import update_compile
from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import TEACHER_GROUP
from phalanx.rl.rollout_graphs import StagedGraphs
from phalanx.rl.update_compile import UpdateSpec
from phalanx.sim.model_files import files_state, pack_model
from phalanx.training.cfg import TrainCfg
from phalanx.training.checkpoint import CHECKPOINT_FORMAT, load_weights, save_checkpoint
from phalanx.training.episode_stats import EpisodeStats
from phalanx.training.logger import RunLogger, duration, time_left_s
from phalanx.training.run_paths import LAST
from phalanx.training.teacher import Teacher
from phalanx.training.timing import FPS_NAMES, IntervalTimer, phase_range

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Watch(Protocol):
    """What watches a training run from beside it (`phalanx train --viewer`); it must not make the trainer wait."""

    def step(self, t: int) -> None: ...

    def iteration(self, metrics: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class Trainer:
    """Trains an actor-critic on any `VecEnv` with PPO as `cfg` says; writes into `run_dir` if
    given (every rank of a job gives the same: all take part in checkpoints, rank 0 writes). With
    a `teacher` (whose observations the env computes as its `TEACHER_GROUP` group), the policy
    starts as its student (`cfg.distill`), exploring with the teacher's standard deviation."""

    def __init__(
        self,
        cfg: TrainCfg,
        env: VecEnv,
        run_dir: Path | None,
        console: Console | None = None,
        dist: DistContext | None = None,
        progress: Progress | None = None,
        teacher: Teacher | None = None,
    ):
        self._begin(cfg, env, run_dir, console, dist, progress)
        spec = update_spec(cfg, env, student=teacher is not None)
        torch.manual_seed(cfg.seed)  # the networks' initial weights
        policy = spec.actor_critic()
        teacher_actor = None if teacher is None else self._teacher_actor(teacher, policy)
        self.dist.broadcast_module(policy)
        images = cfg.policy.image_group
        self.ppo = spec.ppo(
            policy, self.generator, capture=update_capture(cfg, self.device), dist=self.dist, teacher=teacher_actor
        )
        self.graphs = rollout_graphs(cfg, env, self.generator)
        # The policy's static input: the groups the actor and critic read (not an image group they do
        # not) and the image targets the update learns.
        read = {"policy", self.ppo.critic_group} | ({images} if images else set())
        read |= {cfg.policy.image_targets} if cfg.policy.image_targets else set()
        read |= {TEACHER_GROUP} if teacher is not None else set()
        self._obs_in = {group: env.obs[group].clone() for group in read}
        # A compiled update is compiled by a second process beside the env's first reset (which
        # traces the env's step for tens of seconds on a fresh machine); the first update waits for
        # it, then loads what it compiled from inductor's cache. Where the env step's graphs came
        # from that cache, the update's most likely do too, sooner than the process ends: it is
        # stopped (`update_compile.worth_waiting`).
        self._update_compiler = None
        if spec.compile_update and env.reset_pending:
            self._update_compiler = update_compile.start(spec)
            if self._update_compiler is not None:
                weakref.finalize(self, update_compile.stop, self._update_compiler)

    def _begin(
        self,
        cfg: TrainCfg,
        env: VecEnv,
        run_dir: Path | None,
        console: Console | None,
        dist: DistContext | None,
        progress: Progress | None,
    ) -> None:
        """What every learner's run keeps: the run directory, the episode statistics, the counters
        and the stop and watch state (the learner itself is the subclass's)."""
        self.dist = dist or DistContext()
        self.cfg, self.env = cfg, env
        self.saves = run_dir is not None
        self.run_dir = run_dir if self.dist.is_main else None  # only rank 0 writes
        # A user's model file travels in every checkpoint (phalanx's assets go by reference).
        self.model_files = pack_model(cfg.env.model) if self.run_dir is not None and cfg.env is not None else None
        self._model_state = {"model_files": files_state(self.model_files)} if self.model_files else {}
        self.console = console or wide_console()
        self.device = env.device
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(cfg.seed + self.dist.rank)
        self.stats = EpisodeStats(env.reward_names, env.metric_names, self.device)
        self.iteration = 0
        self.frames = 0
        self.elapsed_s = 0.0
        self.last_episode: dict[str, float] = {}  # mean_reward, mean_episode_length once an episode ended
        self._asked = 0  # the stop signal this process received, not yet agreed on by the ranks
        self.stop_signal = 0  # the stop signal every rank agreed on (after the iteration it arrived in)
        self.saved_iteration = -1  # the iteration of the last checkpoint this process wrote (-1: none)
        self.watch: Watch | None = None
        """What watches the training (`--viewer`): `step(t)` after each env step, `iteration(metrics)` after each."""
        self.progress = progress or Progress()  # work begun by this process (the stall watchdog reads it)
        self._iterated = False  # whether this process has run an iteration (compiled, captured)
        self.profiling = False  # name the phases for the torch profiler (set while it records)

    @property
    def policy(self) -> ActorCritic:
        return self.ppo.policy

    def _teacher_actor(self, teacher: Teacher, policy: ActorCritic) -> torch.nn.Module:
        """The teacher's frozen actor on this env's teacher observations (its weights refuse
        another action dimension by name), its actions as `cfg.distill` targets them; `policy`
        takes its standard deviation."""
        obs_dim = self.env.observation_spec[TEACHER_GROUP][0]
        margin = self.cfg.distill.target_margin
        actor = teacher.applied(obs_dim, self.env.action_dim, self.device, self.cfg.seed, margin)
        with torch.no_grad():
            policy.log_std.copy_(teacher.log_std)
        return actor

    # ----------------------------------------------------------------------------- rollout

    def _collect(self, step_timer: IntervalTimer) -> None:
        """T env steps into PPO's storage, then its returns. With rollout capture the agent's work
        before and after each `env.step` replays a CUDA graph of its own (recorded in the second
        iteration), and the env step replays the env's graph between them."""
        obs = self.env.obs
        for t in range(self.cfg.num_steps_per_env):
            self.progress.tick()  # on entering a step: a rank blocked inside it has counted it
            self._copy_obs_in(obs)
            actions = self.graphs.run(("act", t), self.ppo.act, self._obs_in, t)
            step_timer.begin()
            with phase_range("env_step", self.profiling):
                obs, reward, terminated, truncated, extras = self.env.step(actions)
            step_timer.end()
            if self.watch is not None:
                self.watch.step(t)
            self.graphs.run(("record", t), self._record, t, reward, terminated, truncated, extras)
        self._copy_obs_in(obs)
        self.graphs.run(("returns",), self.ppo.compute_returns, self._obs_in)
        self.graphs.warm()

    def _copy_obs_in(self, obs: dict[str, torch.Tensor]) -> None:
        for group, value in self._obs_in.items():
            value.copy_(obs[group])

    def _record(self, t: int, reward, terminated, truncated, extras: dict[str, Any]) -> None:
        self.ppo.record(t, reward, terminated, truncated, extras["final_obs"])
        self.stats.add(extras["episode"])
        if t == self.cfg.num_steps_per_env - 1:
            self.stats.keep_log(extras["log"])

    # ----------------------------------------------------------------------------- loop

    @property
    def interrupted(self) -> bool:
        return self.stop_signal != 0

    @property
    def out_of_time(self) -> bool:
        """`cfg.max_time_s` reached, by the clock every rank shares (a run resumed past it trains no more)."""
        return self.cfg.max_time_s is not None and self.elapsed_s >= self.cfg.max_time_s

    def learn(self) -> None:
        """Runs iterations up to `cfg.max_iterations`, or until `cfg.max_time_s` of training.
        Ctrl-C (SIGINT) or SIGTERM finishes the iteration, saves a checkpoint and stops; with
        several ranks, all stop after the same one."""
        # Events an earlier attempt logged past this run's checkpoint are hidden in TensorBoard.
        logger = RunLogger(
            self.run_dir, self.console, self.frames + 1, self.cfg.logger, to_data(self.cfg) if self.run_dir else None
        )
        previous_handlers = {sig: signal.signal(sig, self._on_stop_signal) for sig in STOP_SIGNALS}
        if swallowed := swallowed_stop():  # arrived in start-up, where a library swallowed its raise
            self._on_stop_signal(swallowed, None)
        display = ProgressBar(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        try:
            if self.iteration == 0 and self.cfg.spread_episode_ends:  # a fresh run, not a resumed one
                self.env.randomize_time_limits()
            max_time_s = self.cfg.max_time_s
            with display:
                bar = display.add_task(self.cfg.task, total=self.cfg.max_iterations, completed=self.iteration)
                reported_invalid = 0
                while self.iteration < self.cfg.max_iterations and not self.interrupted and not self.out_of_time:
                    metrics = self.iterate()
                    logger.log(metrics)
                    if self.watch is not None:
                        self.watch.iteration(metrics)
                    display.console.print(logger.line(metrics, self.cfg.max_iterations, max_time_s))
                    problems = metrics["invalid_env_resets"] + metrics["nonfinite_actions"]
                    if problems > reported_invalid:  # new ones this iteration
                        reported_invalid = problems
                        for line in self.env.report_invalid():
                            display.console.print(f"[yellow]warning:[/yellow] {line}")
                    if metrics["skipped_updates"]:
                        display.console.print(
                            f"[yellow]warning:[/yellow] {metrics['skipped_updates']:.0f} minibatch updates "
                            "skipped so far: non-finite loss or gradient"
                        )
                    total = None
                    if max_time_s is not None:  # the bar's ETA: to the time limit where that comes first
                        left = time_left_s(metrics, self.cfg.max_iterations, max_time_s)
                        total = self.iteration + round(left / metrics["time_s"] * self.iteration)
                    display.update(bar, completed=self.iteration, total=total)
                    if self.iteration % self.cfg.save_interval == 0:
                        self.save()
            if self.saved_iteration != self.iteration:
                self.save()
            if self.interrupted:
                name = signal.Signals(self.stop_signal).name
                path, iteration = self.checkpoint_path(), self.iteration
                self.console.print(f"interrupted by {name}: saved {path} at iteration {iteration}")
            elif self.out_of_time:
                path, spent = self.checkpoint_path(), duration(self.elapsed_s)
                self.console.print(
                    f"--max-time-s {max_time_s:g}: {spent} of training, saved {path} at iteration {self.iteration}"
                )
        finally:
            # A rank leaving on an error (a lost peer) ignores stop signals from here: the
            # launcher's SIGTERM then cannot cut its report of the loss short (its process ends).
            ignore = self.dist.active and sys.exc_info()[0] is not None
            for sig, handler in previous_handlers.items():
                signal.signal(sig, signal.SIG_IGN if ignore else handler)
            logger.close()

    def release_graphs(self) -> None:
        """Drops the rollout and update CUDA graphs. NCCL does not destroy a communicator while
        graphs that captured its collectives exist (destroy_process_group waits forever), so
        distributed runs call this first."""
        self.graphs.clear()
        self.ppo.release_graph()

    def _on_stop_signal(self, signum: int, frame) -> None:
        """The first SIGINT or SIGTERM asks to stop: it joins the iteration's sum over ranks, so
        every rank stops after the same iteration. A second Ctrl-C of a single process aborts;
        other repeats are ignored: a scheduler signals every process of a job and torchrun's agent
        forwards the signal again, and the save is what they wait for."""
        if self._asked:
            if signum == signal.SIGINT and not self.dist.active:
                raise KeyboardInterrupt
            return
        self._asked = signum
        again = " (Ctrl-C again to abort)" if signum == signal.SIGINT and not self.dist.active else ""
        name = signal.Signals(signum).name
        self.console.print(f"{name}: finishing this iteration, then saving a checkpoint{again}")

    def iterate(self) -> dict[str, Any]:
        """One iteration: a rollout, its returns, the PPO update; returns its metrics (one host read)."""
        # The first iteration of a process compiles and captures: the start-up allowance applies.
        first = not self._iterated
        phase = f"iteration {self.iteration}" + (", the first of this process" if first else "")
        self.progress.enter(phase, slow=first)
        step_timer, collect_timer, total_timer = (IntervalTimer(self.device) for _ in range(3))
        total_timer.begin()
        self.stats.sums.zero_()
        losses = self._learn(step_timer, collect_timer)
        total_timer.end()

        step_s, collect_s, total_s = step_timer.seconds(), collect_timer.seconds(), total_timer.seconds()
        local_frames = self.cfg.num_steps_per_env * self.env.num_envs
        rates = [local_frames / step_s, local_frames / collect_s, local_frames / total_s]
        # The one host read of the iteration (after one sum over ranks when distributed).
        env_log = [f"env/{name}" for name in self.stats.log_names]
        stops = [f"stop/{sig.name}" for sig in STOP_SIGNALS]
        names = [*self.stats.names, *losses, *env_log, "invalid_env_resets", "nonfinite_actions", "action_std"]
        names += [*stops, "clock_s", *FPS_NAMES]
        asked = [float(self._asked == sig) for sig in STOP_SIGNALS]
        # float64: the clock's sum keeps its digits over long runs (the float32 values gain none).
        host_values = torch.tensor([*asked, self.elapsed_s + total_s, *rates], device=self.device, dtype=torch.float64)
        device_values = [*self.stats.sums, *(v.float() for v in losses.values()), *self.stats.log]
        # Detached: a tensor computed from a parameter with autograd on holds the parameter's gradient
        # accumulator, bound to this (default) stream; alive at the next update's CUDA graph capture
        # (e.g. while a profiler holds this frame), it makes the capture fail.
        device_values += [self.env.invalid_resets.float(), self.env.nonfinite_actions.float()]
        device_values += [self._action_std()]
        summed = self.dist.sum_(torch.cat([torch.stack(device_values).double(), host_values]))
        stats = dict(zip(names, summed.tolist(), strict=True))
        for key in [*losses, *env_log, "action_std"]:  # losses, the learning rate, ...: the mean over ranks
            stats[key] /= self.dist.world_size
        for sig, name in zip(STOP_SIGNALS, stops, strict=True):  # a signal to any rank stops every rank now
            if stats[name] > 0:
                self.stop_signal = sig  # SIGTERM wins over SIGINT: the later in STOP_SIGNALS
        frames = local_frames * self.dist.world_size
        self.frames += frames
        # The training clock: the ranks' mean (theirs differ a little), so that every rank logs,
        # saves and stops on --max-time-s with the same one.
        self.elapsed_s = stats["clock_s"] / self.dist.world_size
        self.last_episode = self.stats.episode_means(stats, self.last_episode)
        metrics = {
            "iteration": self.iteration,
            "frames": self.frames,
            "time_s": self.elapsed_s,
            **{name: stats[name] for name in FPS_NAMES},  # FPS are sums over ranks, frames the total
            **self.last_episode,
            "episodes": int(stats["episodes"]),
            "invalid_env_resets": int(stats["invalid_env_resets"]),
            "nonfinite_actions": int(stats["nonfinite_actions"]),
        }
        metrics.update({k: v for k, v in stats.items() if k.startswith(("loss/", "learner/"))})
        metrics["learning_rate"] = stats["learning_rate"]
        metrics["skipped_updates"] = int(stats["skipped_updates"])
        metrics["action_std"] = stats["action_std"]  # the policy's, averaged over action dimensions
        metrics.update({k: stats[k] for k in env_log})
        metrics.update(self.stats.per_episode(stats))
        self.iteration += 1
        self._iterated = True
        return metrics

    def _learn(self, step_timer: IntervalTimer, collect_timer: IntervalTimer) -> dict[str, torch.Tensor]:
        """The iteration's learning: a rollout (timed by `collect_timer`, its env steps by
        `step_timer`), its returns and the PPO update; returns the losses (device tensors)."""
        collect_timer.begin()
        self.ppo.begin_iteration(self.iteration)
        with phase_range("rollout", self.profiling):
            self._collect(step_timer)
        collect_timer.end()
        with phase_range("ppo_update", self.profiling):
            self.progress.tick()
            if self._update_compiler is not None:  # its compiled graphs are in the cache once it is done
                if update_compile.worth_waiting():
                    update_compile.finish(self._update_compiler)
                else:  # warm caches: the update loads its graphs sooner than the process could
                    update_compile.stop(self._update_compiler)
                self._update_compiler = None
            return self.ppo.update()

    def _action_std(self) -> torch.Tensor:
        """The policy's exploration standard deviation, averaged over action dimensions (a device scalar)."""
        return self.policy.log_std.detach().exp().mean()

    # ----------------------------------------------------------------------------- checkpoints

    def checkpoint_path(self) -> Path | None:
        return None if self.run_dir is None else self.run_dir / LAST

    def state_dict(self) -> dict[str, Any] | None:
        """The job's state: the learner (alike on every rank) and each rank's envs and random
        generators, in rank order under "ranks". A collective: every rank calls it, rank 0
        gets the state, the others None."""
        own = {"env": self.env.state_dict(), "generator": self.generator.get_state()}
        own["torch_rng"] = torch.get_rng_state()
        own |= self._rank_learner_state()
        ranks = self.dist.gather_to_main(own, self.device)
        if ranks is None:
            return None
        return {
            "format": CHECKPOINT_FORMAT,
            "task": self.cfg.task,
            "config": to_data(self.cfg),
            "iteration": self.iteration,
            "frames": self.frames,
            "elapsed_s": self.elapsed_s,
            "last_episode": self.last_episode,
            **self._learner_state(),
            "ranks": ranks,
        } | self._model_state

    def _learner_state(self) -> dict[str, Any]:
        """The learner's part of a checkpoint: "policy" and "obs_norm" (what play and export
        read) and what resuming needs."""
        return {
            "policy": self.policy.state_dict(),
            "obs_norm": self.ppo.obs_norm.state_dict(),
            "critic_norm": self.ppo.critic_norm.state_dict(),
            "ppo": self.ppo.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continues exactly where `state` stopped: each rank takes its own envs and generators.
        Ranks the checkpoint has no envs for (a job with more ranks) keep their fresh ones."""
        self.iteration, self.frames, self.elapsed_s = state["iteration"], state["frames"], state["elapsed_s"]
        self.last_episode = state["last_episode"]
        self._load_learner(state)
        ranks = state["ranks"]
        if len(ranks) != self.dist.world_size:
            fate = "keep fresh envs" if len(ranks) < self.dist.world_size else "were left out"
            self.console.print(
                f"[yellow]warning:[/yellow] the checkpoint holds the envs of {len(ranks)} rank(s), this job has "
                f"{self.dist.world_size}: the others {fate}, so the run continues, but not exactly"
            )
        if self.dist.rank < len(ranks):
            own = ranks[self.dist.rank]
            self.generator.set_state(own["generator"])
            torch.set_rng_state(own["torch_rng"])
            self.env.load_state_dict(to_device(own["env"], self.device))
            self._load_rank_learner_state(own)

    def _rank_learner_state(self) -> dict[str, Any]:
        """What of the learner is this rank's own (PPO's: nothing): it goes with the rank's envs."""
        return {}

    def _load_rank_learner_state(self, own: dict[str, Any]) -> None:
        """`_rank_learner_state`'s back in place."""

    def _load_learner(self, state: dict[str, Any]) -> None:
        """The learner's part of a checkpoint (`_learner_state`'s) back in place."""
        load_weights(self.policy, state["policy"], "--resume: the policy")
        load_weights(self.ppo.obs_norm, state["obs_norm"], "--resume: the observation normalizer")
        load_weights(self.ppo.critic_norm, state["critic_norm"], "--resume: the critic's observation normalizer")
        self.ppo.load_state_dict(state["ppo"])

    def save(self) -> None:
        """Writes model_last.pt and model_ITERATION.pt (rank 0; every rank takes part, and waits
        until rank 0 has written: a slow disk is not a stall, it is a slow phase on every rank)."""
        if not self.saves:
            return
        self.progress.enter("saving a checkpoint", slow=True)
        state = self.state_dict()
        path = self.checkpoint_path()
        if state is not None and path is not None:
            save_checkpoint(path, state, path.with_name(f"model_{self.iteration}.pt"))
        self.dist.barrier(self.device)
        self.saved_iteration = self.iteration
        self.progress.tick()


def to_device(value: Any, device: torch.device) -> Any:
    """Moves the tensors of a nested state to `device` (generator states stay on the CPU)."""
    if isinstance(value, dict):
        return {k: v if k == "rng" else to_device(v, device) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return value


def update_capture(cfg: TrainCfg, device: torch.device) -> bool:
    """Whether the learner records its updates as CUDA graphs: `cfg.capture_update`, by default
    where `device` is CUDA."""
    return device.type == "cuda" if cfg.capture_update is None else cfg.capture_update


def rollout_graphs(cfg: TrainCfg, env: VecEnv, generator: torch.Generator) -> StagedGraphs:
    """The graphs of the agent's work around each env step: recorded where `cfg.capture_rollout`
    says (default: where the env captures its own step, on CUDA)."""
    capture = env.capture if cfg.capture_rollout is None else cfg.capture_rollout
    if capture and not env.capture:
        raise ConfigError("capture_rollout: needs the env step captured too (a CUDA device)")
    return StagedGraphs(capture, generator)


def update_spec(cfg: TrainCfg, env: VecEnv, student: bool = False) -> UpdateSpec:
    """What the PPO update of training `cfg` on `env` compiles for (a `student`'s stores its
    teacher's actions and learns them, as `cfg.distill` says)."""
    images = cfg.policy.image_group
    # A group the env lacks is refused, by name, when the networks are built.
    image_dtype = env.obs[images].dtype if images in env.obs else torch.uint8
    return UpdateSpec(
        policy=cfg.policy,
        algo=cfg.algo,
        observation_spec={group: tuple(shape) for group, shape in env.observation_spec.items()},
        action_dim=env.action_dim,
        num_envs=env.num_envs,
        num_steps=cfg.num_steps_per_env,
        normalize=cfg.empirical_normalization,
        tf32=cfg.tf32,
        bf16_update=cfg.bf16_update,
        compile_update=cfg.compile_update and env.device.type == "cuda",
        image_dtype=str(image_dtype).removeprefix("torch."),
        device=str(env.device),
        distill=cfg.distill if student else None,
    )
