"""`phalanx bench compare TASK --trainers phalanx,rsl_rl,rl_games,skrl,sb3`: the same task trained by
each RL library in turn, each in a fresh process (`phalanx train --trainer X`), on the same env
count and PPO settings. Every trainer writes the same metrics.jsonl rows (`MeteredEnv` measures
the other libraries the way phalanx's trainer measures itself), so the figures compare like with
like: median fps_step, fps_step_inference and fps_total after the warm-up iterations, start-up
(launch -> first iteration), the time from launch to the learning threshold, and the GPU memory
the process took (NVML's used memory at its peak, less what was used before launch)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phalanx.bench.learn_job import MetricFollower
from phalanx.bench.scaling import stop_job
from phalanx.bench.telemetry import _nvml_handles
from phalanx.flags import split_args

if TYPE_CHECKING:
    from phalanx.bench.options import CompareCfg

THRESHOLDS = {
    "cartpole": ("mean_episode_length", 285.0),  # 95 % of the 300-step maximum: balanced
    "ant": ("mean_reward", 100.0),
    "humanoid": ("mean_reward", 50.0),
}
"""Per task: the metric (a metrics.jsonl key) and the value that counts as learned (reached when
the metric is >= it)."""


class GpuMemory:
    """NVML's used memory (every process's), in MiB, summed over the GPUs a run uses: `device`, or
    with `gpus` > 1 the first `gpus` (torchrun's ranks take cuda:LOCAL_RANK); None without NVML
    or on the CPU."""

    def __init__(self, device: str, gpus: int = 1):
        handles = _nvml_handles() if device.startswith("cuda") else []
        indices = range(gpus) if gpus > 1 else [int(device.partition(":")[2] or 0)]
        self._handles = [handles[i] for i in indices] if max(indices) < len(handles) else []

    def used_mib(self) -> float | None:
        if not self._handles:
            return None
        import pynvml

        return sum(pynvml.nvmlDeviceGetMemoryInfo(handle).used for handle in self._handles) / 2**20


def _train_command(
    cfg: CompareCfg, trainer: str, device: str, iterations: int, run_dir: Path, gpus: int = 1
) -> list[str]:
    """`phalanx train` of the task with `trainer` (on `gpus` GPUs, through torchrun, if > 1), the
    user's train flags first (the bench's own, later, win), no checkpoints but the last and no
    dashboard."""
    command = [sys.executable, "-m", "phalanx", "train", cfg.task, *split_args(cfg.train_args, "train_args")]
    command += ["--trainer", trainer, "--device", device, "--num-envs", str(cfg.num_envs)]
    command += ["--max-iterations", str(iterations), "--save-interval", "1000000", "--logger", "none"]
    command += ["--gpus", str(gpus)] if gpus > 1 else []
    return [*command, "--run-dir", str(run_dir)]


def warm_caches(cfg: CompareCfg, device: str, run_dir: Path, gpus: int = 1) -> None:
    """One iteration of `phalanx train` on the same task and envs and on `gpus` GPUs, its output in
    warm-up.log (warm-up-Ngpus.log). A job on several GPUs compiles graphs of its own (the update
    with its gradient all-reduce), which a one-GPU warm-up leaves cold."""
    name = "warm-up" if gpus == 1 else f"warm-up-{gpus}gpus"
    command = _train_command(cfg, "phalanx", device, 1, run_dir / name, gpus)
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(run_dir / name, ignore_errors=True)
    with (run_dir / f"{name}.log").open("w") as stream:
        subprocess.run(command, stdout=stream, stderr=subprocess.STDOUT, check=False, timeout=cfg.job_timeout_s)


def run_trainer(cfg: CompareCfg, trainer: str, device: str, run_dir: Path, gpus: int = 1) -> dict[str, Any]:
    """Trains `cfg.task` with `trainer` on `gpus` GPUs for `cfg.iterations` iterations in a new
    process (a torchrun job if `gpus` > 1), watching its metrics.jsonl to time each row from
    launch and sampling GPU memory; returns the figures."""
    out = run_dir / (trainer if gpus == 1 else f"{trainer}-{gpus}gpus")
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "run", ignore_errors=True)  # a re-run starts clean
    command = _train_command(cfg, trainer, device, cfg.iterations, out / "run", gpus)
    memory = GpuMemory(device, gpus)
    before = memory.used_mib()
    peak = before
    follower = MetricFollower(out / "run" / "metrics.jsonl", cfg.metric, window=1)
    rows = follower.rows
    log = out / "train.log"
    launch = time.time()
    last_row = launch
    with log.open("w") as stream:
        job = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while True:
                done = job.poll() is not None
                used = memory.used_mib()
                peak = used if peak is None or used is None else max(peak, used)
                now = time.time()
                if follower.poll(now - launch):
                    last_row = now
                if done:
                    break
                reason = None
                if now - launch > cfg.job_timeout_s:
                    reason = f"timed out after {cfg.job_timeout_s:.0f} s"
                elif 0 < len(rows) < cfg.iterations and now - last_row > cfg.stall_timeout_s:
                    reason = f"stalled: no metrics row for {cfg.stall_timeout_s:.0f} s after iteration {len(rows) - 1}"
                if reason is not None:
                    stop_job(job)
                    return {"trainer": trainer, "gpus": gpus, "valid": False, "reason": reason}
                time.sleep(0.1)
        except BaseException:
            stop_job(job)
            raise
    if job.returncode != 0 or len(rows) < cfg.iterations:
        tail = " / ".join(log.read_text().strip().splitlines()[-3:])
        return {"trainer": trainer, "gpus": gpus, "valid": False, "reason": f"exited {job.returncode}: {tail}"}
    return summarize(cfg, trainer, rows, None if before is None else peak - before) | {"gpus": gpus}


def summarize(cfg: CompareCfg, trainer: str, rows: list[dict[str, Any]], memory_mib: float | None) -> dict[str, Any]:
    metric, threshold = cfg.metric, cfg.threshold
    timed = rows[cfg.warmup + 1 :] or rows[-1:]
    reached = next((r for r in rows if r.get(metric) is not None and r[metric] >= threshold), None)  # null: not finite
    return {
        "trainer": trainer,
        "valid": True,
        "num_envs": cfg.num_envs,
        **{key: statistics.median(r[key] for r in timed) for key in ("fps_step", "fps_step_inference", "fps_total")},
        "startup_s": rows[0]["from_launch_s"],
        "metric": metric,
        "threshold": threshold,
        "to_threshold_from_launch_s": None if reached is None else reached["from_launch_s"],
        "to_threshold_iteration": None if reached is None else reached["iteration"],
        "final_metric": next((r[metric] for r in reversed(rows) if metric in r), None),
        "gpu_memory_mib": memory_mib,
        "curve": [(r["from_launch_s"], r.get(metric)) for r in rows],
    }


def _label(r: dict[str, Any]) -> str:
    gpus = r.get("gpus", 1)
    return r["trainer"] if gpus == 1 else f"{r['trainer']} x{gpus}"


def table(results: list[dict[str, Any]]) -> str:
    """One row per trainer and GPU count; with several counts, each run's fps_total over the same
    trainer's on one GPU (the speed-up)."""
    from phalanx.bench.markdown import markdown_table

    metric = next((r["metric"] for r in results if r["valid"]), "metric")
    multi = any(r.get("gpus", 1) > 1 for r in results)
    one_gpu = {r["trainer"]: r["fps_total"] for r in results if r["valid"] and r.get("gpus", 1) == 1}
    columns = ["trainer", *(["GPUs"] if multi else []), "fps step", "fps step+inference", "fps total"]
    columns += [*(["speed-up"] if multi else []), "start-up", f"{metric} reached", "final " + metric, "GPU memory"]
    rows = []
    for r in results:
        first = [r["trainer"], *([str(r.get("gpus", 1))] if multi else [])]
        if not r["valid"]:
            rows.append([*first, f"invalid: {r['reason']}"])
            continue
        fps = [f"{r[key]:,.0f}" for key in ("fps_step", "fps_step_inference", "fps_total")]
        if multi:
            base = one_gpu.get(r["trainer"])
            fps.append("" if base is None else f"{r['fps_total'] / base:.2f}x")
        reached = r["to_threshold_from_launch_s"]
        when = "not reached" if reached is None else f"{reached:.1f} s (iteration {r['to_threshold_iteration']})"
        mib = r["gpu_memory_mib"]
        rest = [
            f"{r['startup_s']:.1f} s",
            when,
            "-" if r["final_metric"] is None else f"{r['final_metric']:.1f}",
            "" if mib is None else f"{mib:,.0f} MiB",
        ]
        rows.append([*first, *fps, *rest])
    threshold = next((r["threshold"] for r in results if r["valid"]), "")
    note = (
        f"Medians over the iterations after the warm-up; times from launch; {metric} is reached at "
        f">= {threshold} (or never, within the run)."
    )
    if multi:
        note += " With N GPUs: N processes of the same env count each, fps summed over them, GPU memory over all N."
    return markdown_table(columns, rows) + "\n\n" + note


def plot(run_dir: Path, results: list[dict[str, Any]]) -> Path | None:
    """fps_total per trainer (bars), and the metric over the time from launch (curves)."""
    valid = [r for r in results if r["valid"]]
    if not valid:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bars, curves) = plt.subplots(1, 2, figsize=(11, 4))
    bars.bar([_label(r) for r in valid], [r["fps_total"] for r in valid], color="tab:blue")
    bars.tick_params(axis="x", labelrotation=30)
    bars.set_ylabel("fps_total (env steps/s)")
    bars.set_title("training throughput")
    for r in valid:
        points = [(t, v) for t, v in r["curve"] if v is not None]
        curves.plot([t for t, _ in points], [v for _, v in points], label=_label(r))
    curves.axhline(valid[0]["threshold"], color="grey", linestyle=":")
    curves.set_xlabel("seconds from launch")
    curves.set_ylabel(valid[0]["metric"])
    curves.legend()
    fig.tight_layout()
    path = run_dir / "compare.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
