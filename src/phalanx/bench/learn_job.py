"""One job of `phalanx bench learn`: `phalanx train TASK --seed S` in a process (and session) of
its own, followed through its metrics.jsonl until its metric meets the task's result, its budget
of wall clock from launch runs out, or it ends; then what it did, in one JSON-ready dict."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.core.stops import PARENT_ENV
from phalanx.training.registry import LearningResult

GRACE_S = 120.0
"""How long a job asked to stop (SIGTERM: it finishes its iteration and saves a checkpoint) may
take before it is killed."""
PER_EPISODE = ("mean_reward", "mean_episode_length", "metrics/", "reward_terms/")
"""metrics.jsonl keys that are means over the episodes that ended in the iteration (rows with
none carry no new value of them)."""
OUTSIDE_SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals that end a process because someone (a user, a scheduler, the kernel's OOM killer) ended
it; others (SIGSEGV, SIGABRT, ...) are crashes."""
CURVE_POINTS = 600
"""Points of a run's curve kept in bench.json (evenly thinned)."""


@dataclass(frozen=True)
class JobSpec:
    """What one job trains: `task` with `seed`, its caches emptied first (`cold`) or as left."""

    task: str
    seed: int
    cold: bool
    result: LearningResult
    algo: str = "ppo"
    """`phalanx train --algo`: the task's PPO, or an off-policy learner."""

    @property
    def name(self) -> str:
        algo = "" if self.algo == "ppo" else f"-{self.algo}"
        return f"{self.task}{algo}-seed{self.seed}" + ("-cold" if self.cold else "")


class MetricFollower:
    """Reads the rows a trainer appends to metrics.jsonl (from where it left off) and keeps the
    metric's moving mean over the last `window` rows that carry it: per-episode means weighted by
    the row's episodes, other keys (e.g. `env/terrain_level`) alike."""

    def __init__(self, path: Path, metric: str, window: int):
        self.path, self.metric, self.window = path, metric, window
        self.per_episode = metric.startswith(PER_EPISODE)
        self._offset, self._partial = 0, b""
        self._recent: list[tuple[float, float]] = []  # (weight, value)
        self.rows: list[dict[str, Any]] = []  # each with "from_launch_s" and "smoothed" (None before the metric)

    def poll(self, from_launch_s: float) -> list[dict[str, Any]]:
        """The rows written since the last call, each stamped with `from_launch_s`."""
        if not self.path.is_file():
            return []
        with self.path.open("rb") as stream:
            stream.seek(self._offset)
            data = stream.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        new = []
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a blank or torn line (a trainer killed mid-write)
            row["from_launch_s"], row["smoothed"] = from_launch_s, self._add(row)
            new.append(row)
        self.rows += new
        return new

    def _add(self, row: dict[str, Any]) -> float | None:
        value = row.get(self.metric)
        weight = float(row.get("episodes", 0)) if self.per_episode else 1.0
        if isinstance(value, int | float) and math.isfinite(value) and weight > 0:
            self._recent = [*self._recent, (weight, float(value))][-self.window :]
        if not self._recent:
            return None
        return sum(w * v for w, v in self._recent) / sum(w for w, _ in self._recent)

    @property
    def smoothed(self) -> float | None:
        return self.rows[-1]["smoothed"] if self.rows else None


class LearnJob:
    """Launches and follows one job (see the module). `env` is the process environment (its
    caches, its GPU); `command` the `phalanx train` command line; `caches` whether its caches are
    "cold" (empty) or "warm"."""

    def __init__(
        self, spec: JobSpec, slot: str, command: list[str], env: dict[str, str], out: Path, window: int, caches: str
    ):
        self.spec, self.slot, self.command, self.env, self.out = spec, slot, command, env, out
        self.caches = caches  # "cold": the task's caches were empty at launch (or emptied), else "warm"
        self.run_dir = out / "run"
        self.log_path = out / "train.log"
        self.follower = MetricFollower(self.run_dir / "metrics.jsonl", spec.result.metric, window)
        self.process: subprocess.Popen | None = None
        self.launched = math.nan
        self.stop_reason: str | None = None  # why this bench stopped it (see `stop`)
        self.stop_asked = math.nan
        self.reached_row: dict[str, Any] | None = None
        self.ended = math.nan
        self.killed = False  # this bench killed it (it did not stop within GRACE_S of SIGTERM)
        self.concurrent = 1  # the most jobs this one ran beside (itself included)
        self.prerequisites: dict[str, float | None] = {}  # the tasks whose runs it started from: their wall clock

    @property
    def wall_s(self) -> float | None:
        """Seconds from its launch to its end (None while it runs or before it starts)."""
        return None if math.isnan(self.ended) else self.ended - self.launched

    def launch(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("w") as log:
            self.launched = time.time()
            # Its own session: a stop of the bench reaches the job only as the bench passes it on,
            # and should the bench die outright, the job stops too (its iterations are unbounded).
            env = self.env | {PARENT_ENV: str(os.getpid())}
            self.process = subprocess.Popen(
                self.command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def running(self) -> bool:
        return self.process is not None and math.isnan(self.ended)

    def poll(self) -> None:
        """Reads new rows; stops the job at its result or its budget; notes its end."""
        now = time.time()
        from_launch = now - self.launched
        exited = self.process.poll() is not None  # before the last read: its rows are all in
        self._check(self.follower.poll(from_launch))
        if not exited and self.stop_reason is None and from_launch > self.spec.result.budget_s:
            self.stop("budget")
        if exited:
            self.ended = now
            self._signal_group(signal.SIGKILL)  # whatever it left behind in its session
        elif self.stop_reason is not None and now - self.stop_asked > GRACE_S:
            self.killed = True
            self._signal_group(signal.SIGKILL)

    def _check(self, rows: list[dict[str, Any]]) -> None:
        """Stops the job at the first row whose metric meets the result, written within the budget
        while nothing had asked it to stop (rows of the iteration it finishes after a stop do not count)."""
        result = self.spec.result
        for row in rows:
            met = row["smoothed"] is not None and result.reached(row["smoothed"])
            if met and self.stop_reason is None and row["from_launch_s"] <= result.budget_s:
                self.reached_row = row
                self.stop("reached")

    def stop(self, reason: str) -> None:
        """Asks the job to stop (SIGTERM to the trainer: it saves a checkpoint and exits 143);
        `reason`: "reached", "budget" or "interrupted" (the bench was). Later calls do nothing."""
        if self.stop_reason is None and self.running:
            self.stop_reason, self.stop_asked = reason, time.time()
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)

    def kill(self) -> None:
        """Ends the job's whole session at once (the bench itself is failing)."""
        if self.process is not None:
            self._signal_group(signal.SIGKILL)
            self.process.wait()

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def checkpoint(self) -> Path | None:
        path = self.run_dir / "checkpoints" / "model_last.pt"
        return path if path.is_file() else None

    def outcome(self) -> dict[str, Any]:
        """What the job did, JSON-ready (see `phalanx.bench.learn` for the fields)."""
        spec, rows, reached = self.spec, self.follower.rows, self.reached_row
        code = None if self.process is None else self.process.returncode
        status, reason = self._status(code)
        timed = rows[3:] or rows
        return {
            "task": spec.task,
            "algo": spec.algo,
            "seed": spec.seed,
            "cold_run": spec.cold,
            "caches": self.caches,
            "slot": self.slot,
            "status": status,
            "reason": reason,
            "exit_code": code,
            "metric": spec.result.metric,
            "direction": spec.result.direction,
            "threshold": spec.result.threshold,
            "budget_s": spec.result.budget_s,
            "reached": reached is not None,
            "reached_s": None if reached is None else reached["from_launch_s"],
            "reached_training_s": None if reached is None else reached["time_s"],
            "reached_iteration": None if reached is None else reached["iteration"],
            "startup_s": rows[0]["from_launch_s"] if rows else None,
            "iterations": len(rows),
            "frames": rows[-1]["frames"] if rows else 0,
            "fps_total": statistics.median(r["fps_total"] for r in timed) if rows else None,
            "final_metric": self.follower.smoothed,
            "best_metric": _best([r["smoothed"] for r in rows], spec.result.direction),
            "wall_s": self.wall_s,
            "launched_at": self.launched,
            "concurrent_jobs": self.concurrent,
            "prerequisites_s": self.prerequisites,
            "log_tail": _tail(self.log_path) if status in ("failed", "killed") else None,
            "curve": _thinned([(r["from_launch_s"], r["smoothed"]) for r in rows if r["smoothed"] is not None]),
        }

    def _status(self, code: int | None) -> tuple[str, str]:
        """("reached" | "budget" | "interrupted" | "ended" | "failed" | "killed" | "running" | "not run", why)."""
        if code is None:
            return ("running", "still training") if self.process is not None else ("not run", "not started")
        if self.stop_reason is not None:  # this bench asked it to stop
            # 143: it saved and exited; -SIGTERM: the signal came before the trainer's handler (start-up).
            if code in (0, 128 + signal.SIGTERM, -signal.SIGTERM):
                if self.stop_reason == "interrupted":
                    return "interrupted", "stopped when the bench was interrupted"
                if self.stop_reason == "reached":
                    return "reached", f"stopped at the threshold, {self.reached_row['from_launch_s']:.1f} s from launch"
                return "budget", f"stopped at its budget of {self.spec.result.budget_s:g} s"
            if self.killed:
                return "failed", f"asked to stop ({self.stop_reason}), still running {GRACE_S:g} s later: killed"
        if code < 0:
            name = _signal_name(-code)
            if -code in OUTSIDE_SIGNALS:
                return "killed", f"killed from outside by {name}"
            return "failed", f"crashed ({name})"
        if code - 128 in (signal.SIGINT, signal.SIGTERM):
            return "killed", f"stopped from outside by {_signal_name(code - 128)} (it saved and exited {code})"
        if code == 0:
            return "ended", "trained all its iterations before its threshold or budget"
        return "failed", f"exited {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _best(values: list[float | None], direction: str) -> float | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return max(present) if direction == ">=" else min(present)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return ""


def _thinned(points: list[tuple[float, float]]) -> list[list[float]]:
    step = max(1, math.ceil(len(points) / CURVE_POINTS))
    kept = points[::step] + ([points[-1]] if points and (len(points) - 1) % step else [])
    return [[round(t, 2), v] for t, v in kept]


def train_command(spec: JobSpec, device: str, run_dir: Path, train_args: list[str], extra: list[str]) -> list[str]:
    """`phalanx train` of the job: the task's defaults, the user's flags, then the bench's own (an
    iteration count no job reaches, the budget as a time limit, which the bench's stop from
    launch comes before: its logged ETA is then the budget's; no periodic checkpoints, no
    dashboard). Another library's trainer (`--trainer` in the flags) takes no time limit."""
    algo = [] if spec.algo == "ppo" else ["--algo", spec.algo]
    command = [sys.executable, "-m", "phalanx", "train", spec.task, *algo, *train_args, *extra]
    command += ["--seed", str(spec.seed), "--device", device, "--max-iterations", "1000000000"]
    if not any(arg.split("=")[0] == "--trainer" for arg in train_args):
        command += ["--max-time-s", f"{spec.result.budget_s:g}"]
    command += ["--save-interval", "1000000000", "--logger", "none", "--run-dir", str(run_dir)]
    return command
