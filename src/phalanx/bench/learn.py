"""`phalanx bench learn [TASK ...|all] --seeds K --gpus LIST`: does `phalanx train TASK`, with
the task's defaults on today's code, still reach the result the task declares when it is
registered (`phalanx.register(..., result=LearningResult(...))`), and how fast from launch?

Each task and seed trains in a fresh process (`LearnJob`), one job per GPU at a time; with `cold`,
each task first runs once more on emptied caches (a fresh machine's start), and runs that would
share a task's empty caches wait until it has compiled. A task over a frozen low-level policy or a
teacher trains over that task's run with the same seed, which must be in the suite. A job stops at
its threshold or budget; a failed one is reported with its log tail. Videos are played once all
jobs are done, off the clock. A task passes when two thirds of its seeds reach its threshold.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phalanx.bench.learn_job import JobSpec, LearnJob, train_command
from phalanx.bench.startup import cache_env
from phalanx.core.errors import ConfigError

if TYPE_CHECKING:
    from phalanx.envs.cfg import TaskCfg
    from phalanx.training.registry import LearningResult

POLL_S = 0.2
PLAY_ENVS = 16


def logged_keys(cfg: TaskCfg) -> set[str]:
    """The metrics.jsonl keys a phalanx training of the task writes that can count as its result:
    the episodes' mean return and length, its metrics (`metrics/NAME`), reward terms
    (`reward_terms/NAME`), curriculum levels and terrain level (`env/NAME`)."""
    keys = {"mean_reward", "mean_episode_length"}
    keys |= {f"metrics/{name}" for name in cfg.metrics} | {f"reward_terms/{name}" for name in cfg.rewards}
    keys |= {f"env/{name}" for name in cfg.curriculum}
    return keys | ({"env/terrain_level"} if cfg.terrain is not None else set())


def check_result(task: str, result: LearningResult, cfg: TaskCfg, field: str | None = None) -> None:
    """Raises ConfigError if the task's training does not log the result's metric (`field`: the
    flag that gave it, if one did)."""
    keys = logged_keys(cfg)
    if result.metric not in keys:
        where = "" if field else "its result: "
        raise ConfigError(
            f"{where}task {task!r} does not log {result.metric!r}; it logs {', '.join(sorted(keys))}", field
        )


def passes(reached: int, seeds: int) -> bool:
    """At least two thirds of the seeds reached the threshold (2 of 3)."""
    return seeds > 0 and reached >= math.ceil(2 * seeds / 3)


def plan(
    tasks: dict[str, LearningResult], seeds: list[int], cold: bool, algos: tuple[str, ...] = ("ppo",)
) -> list[JobSpec]:
    """Every job: per task a cold run (seed `seeds[0]`, the first algorithm) if asked, then one
    warm run per algorithm and seed."""
    specs = []
    for task, result in tasks.items():
        specs += [JobSpec(task, seeds[0], True, result, algos[0])] if cold else []
        specs += [JobSpec(task, seed, False, result, algo) for algo in algos for seed in seeds]
    return specs


def run_label(r: dict[str, Any]) -> str:
    """What a run's row is judged under: its task, or "TASK --algo NAME" for an off-policy run."""
    algo = r.get("algo", "ppo")
    return r["task"] if algo == "ppo" else f"{r['task']} --algo {algo}"


@dataclass(frozen=True)
class Prerequisite:
    """A task whose trained policy a job needs: its run with the same seed gives its checkpoint
    through `flag` (e.g. `--teacher`); `relation` says how, in messages ("learns from")."""

    task: str
    flag: str
    relation: str


@dataclass(frozen=True)
class Slot:
    """Where a job runs: `device` as the job sees it, with `env` (e.g. CUDA_VISIBLE_DEVICES)."""

    name: str
    device: str
    env: dict[str, str]
    gpu_uuid: str | None = None


class Suite:
    """Runs `specs` over `slots` (one job per slot at a time) in `run_dir`/jobs/NAME, each task's
    caches in `cache_root`/TASK. `prerequisites`: task -> the tasks whose trained policies it
    needs; `video_steps`: task -> env steps of its videos."""

    def __init__(
        self,
        specs: list[JobSpec],
        slots: list[Slot],
        run_dir: Path,
        cache_root: Path,
        train_args: list[str],
        window: int,
        prerequisites: dict[str, list[Prerequisite]],
        video_steps: dict[str, int],
    ):
        self.pending, self.slots, self.run_dir = list(specs), slots, run_dir
        self.cache_root, self.train_args, self.window = cache_root, train_args, window
        self.prerequisites = prerequisites
        self.video_steps = video_steps
        self.jobs: dict[JobSpec, LearnJob] = {}
        self.skipped: dict[JobSpec, str] = {}
        self.free = list(slots)
        self.stopping = False

    # ----------------------------------------------------------------------------- scheduling

    def run(self, on_change=None) -> None:
        """Launches jobs as slots free up and their dependencies are met; returns when all are
        done (or, after `stop_all`, when the running ones have stopped). `on_change(self)` is
        called whenever a job ends."""
        while True:
            for job in [j for j in self.jobs.values() if j.running]:
                if self.stopping:
                    job.stop("interrupted")
                job.poll()
                if not job.running:
                    self.free.append(next(s for s in self.slots if s.name == job.slot))
                    if on_change is not None:
                        on_change(self)
            if not self.stopping:
                self._launch_ready()
            running = [j for j in self.jobs.values() if j.running]
            for job in running:
                job.concurrent = max(job.concurrent, len(running))
            if not running:
                if self.stopping or not self.pending:
                    return
                for spec in self.pending:  # none can start: each waits on a job that never will
                    self.skipped[spec] = "waits on a job that cannot run (a cycle of prerequisite tasks)"
                self.pending = []
                return
            time.sleep(POLL_S)

    def abort(self) -> None:
        """Kills every running job's session (the bench itself failed)."""
        for job in self.jobs.values():
            if job.running:
                job.kill()

    def stop_all(self) -> None:
        """Launches no more jobs; `run` stops the running ones (they save and exit) on its next pass."""
        self.stopping = True

    def _launch_ready(self) -> None:
        # Cold runs first (they fill the caches the warm ones wait for), then the longest budgets.
        self.pending.sort(key=lambda s: (not s.cold, -s.result.budget_s))
        for spec in list(self.pending):
            if not self.free or self.stopping:
                return
            state, given = self._dependencies(spec)
            if state == "wait":
                continue
            self.pending.remove(spec)
            if state == "skip":
                self.skipped[spec] = given
                continue
            self._launch(spec, self.free.pop(0), given)

    def _dependencies(self, spec: JobSpec) -> tuple[str, Any]:
        """("wait" | "go" | "skip", for "go" the prerequisites' runs (flag, checkpoint, their jobs'
        wall clock), for "skip" why)."""
        if not spec.cold:  # a task's cold run goes first; then no run starts while one fills the caches
            cold_pending = any(s.task == spec.task and s.cold for s in self.pending)
            same_task = [j for s, j in self.jobs.items() if s.task == spec.task and j.running]
            if cold_pending or any(j.caches == "cold" and len(j.follower.rows) < 2 for j in same_task):
                return "wait", None
        given = []
        for need in self.prerequisites.get(spec.task, []):
            run = (need.task, spec.seed, False, "ppo")  # the prerequisite task's own training
            job = next((j for s, j in self.jobs.items() if (s.task, s.seed, s.cold, s.algo) == run), None)
            if job is None:
                planned = any((s.task, s.seed, s.cold, s.algo) == run for s in self.pending)
                return ("wait", None) if planned else ("skip", f"no {need.task}-seed{spec.seed} run in this suite")
            if job.running:
                return "wait", None
            checkpoint = job.checkpoint()
            if checkpoint is None:
                return "skip", f"the run it {need.relation} ({need.task}-seed{spec.seed}) left no checkpoint"
            given.append((need, str(checkpoint.resolve()), job.wall_s))
        return "go", given

    def _launch(self, spec: JobSpec, slot: Slot, given: list[tuple[Prerequisite, str, float | None]]) -> None:
        out = self.run_dir / "jobs" / spec.name
        extra = [arg for need, checkpoint, _ in given for arg in (need.flag, checkpoint)]
        command = train_command(spec, slot.device, out / "run", self.train_args, extra)
        cache = self.cache_root / spec.task
        caches = "cold" if spec.cold or not any(p.is_file() for p in cache.rglob("*")) else "warm"
        env = cache_env(cache, spec.cold) | slot.env | {"PYTHONUNBUFFERED": "1"}
        job = LearnJob(spec, slot.name, command, env, out, self.window, caches)
        job.prerequisites = {need.task: wall_s for need, _, wall_s in given}
        job.launch()
        self.jobs[spec] = job

    # ----------------------------------------------------------------------------- results

    def results(self, specs: list[JobSpec]) -> list[dict[str, Any]]:
        """Every planned job's outcome, in plan order (jobs never run say why)."""
        rows = []
        for spec in specs:
            job = self.jobs.get(spec)
            if job is not None:
                slot = next(s for s in self.slots if s.name == job.slot)
                rows.append(job.outcome() | {"gpu_uuid": slot.gpu_uuid})
            else:
                if spec in self.skipped:
                    reason = self.skipped[spec]
                elif spec in self.pending and not self.stopping:
                    reason = "not started yet (the suite was running when this was written)"
                else:
                    reason = "the suite stopped before it started"
                rows.append(
                    {"task": spec.task, "algo": spec.algo, "seed": spec.seed, "cold_run": spec.cold, "caches": None}
                )
                rows[-1] |= {"status": "not run", "reason": reason, "reached": False}
        return rows

    def play_videos(self, which: str, out_dir: Path) -> dict[JobSpec, dict[str, Any]]:
        """Plays the policies of the finished jobs with their mean actions into out_dir/NAME.mp4
        (`which`: "each" job, or each task's "first" warm seed), one process per slot at a time;
        returns each job's video and play summary, or why it failed."""
        chosen = [s for s, j in self.jobs.items() if j.checkpoint() is not None]
        if which == "first":  # each task's lowest seed that left a policy, one that reached first
            best = {}
            for spec in sorted(chosen, key=lambda s: (s.cold, self.jobs[s].reached_row is None, s.seed)):
                best.setdefault(spec.task, spec)
            chosen = list(best.values())
        played: dict[JobSpec, dict[str, Any]] = {}
        queue, active, free = list(chosen), [], list(self.slots)
        while queue or active:
            while queue and free:
                spec, slot = queue.pop(0), free.pop(0)
                active.append((spec, slot, *self._play(spec, slot, out_dir)))
            time.sleep(POLL_S)
            for entry in [e for e in active if e[2].poll() is not None]:
                spec, slot, process, log = entry
                active.remove(entry)
                free.append(slot)
                lines = log.read_text(errors="replace").strip().splitlines()
                summary = next((line for line in lines if "episodes finished" in line), None)
                if process.returncode == 0 and (out_dir / f"{spec.name}.mp4").is_file():
                    played[spec] = {"video": f"{spec.name}.mp4", "played": summary}
                else:
                    tail = lines[-1] if lines else "no output"
                    played[spec] = {"video": None, "played": f"play failed (exit {process.returncode}): {tail}"}
        return played

    def _play(self, spec: JobSpec, slot: Slot, out_dir: Path) -> tuple[subprocess.Popen, Path]:
        job = self.jobs[spec]
        out_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "phalanx", "play", spec.task, "--checkpoint", str(job.checkpoint())]
        command += ["--num-envs", str(PLAY_ENVS), "--device", slot.device, "--logger", "none"]
        command += ["--steps", str(self.video_steps[spec.task]), "--video", str(out_dir / f"{spec.name}.mp4")]
        env = cache_env(self.cache_root / spec.task, False) | slot.env
        log = job.out / "play.log"
        with log.open("w") as stream:
            return subprocess.Popen(command, env=env, stdout=stream, stderr=subprocess.STDOUT), log


def video_steps(cfg: TaskCfg, seconds: float) -> int:
    """Env steps for `seconds` of the task's simulated time, at most one episode."""
    from phalanx.sim.model import load_spec

    physics_dt = cfg.sim.dt or load_spec(cfg.model).option.timestep
    step_s = physics_dt * cfg.sim.decimation * cfg.actions.low_level_steps()
    return max(1, math.ceil(min(seconds, cfg.episode_length_s) / step_s - 1e-6))


def gpu_slots(indices: list[int], uuids: list[str]) -> list[Slot]:
    """One slot per CUDA device index (as this process numbers them), each job seeing only that GPU
    (named by its UUID: an inherited CUDA_VISIBLE_DEVICES renumbers the indices), as cuda:0."""
    return [Slot(f"cuda:{i}", "cuda", {"CUDA_VISIBLE_DEVICES": uuids[i]}, uuids[i]) for i in indices]


def cpu_slots(count: int) -> list[Slot]:
    """`count` CPU slots; torch's threads split between them."""
    threads = str(max(1, (os.cpu_count() or 1) // count))
    return [Slot(f"cpu-{k}", "cpu", {"OMP_NUM_THREADS": threads}) for k in range(count)]
