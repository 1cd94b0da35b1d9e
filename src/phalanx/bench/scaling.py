"""Strong and weak scaling: the same training job under torchrun with 1, 2, 4, ... processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from phalanx.flags import split_args

if TYPE_CHECKING:
    from phalanx.bench.options import ScalingCfg


def stop_job(job: subprocess.Popen) -> None:
    """SIGTERM to torchrun (which stops its ranks, each in a session of its own, within 30 s),
    then SIGKILL to whatever of torchrun and its ranks is still alive 35 s later."""
    try:
        procs = [psutil.Process(job.pid), *psutil.Process(job.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=35)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    job.wait()


def envs_per_rank(mode: str, num_envs: int, ranks: int) -> int | None:
    """strong: `num_envs` in all, split over the ranks (None if it does not split evenly);
    weak: `num_envs` on every rank."""
    if mode == "weak":
        return num_envs
    return num_envs // ranks if num_envs % ranks == 0 else None


def run_point(cfg: ScalingCfg, ranks: int, device: str, run_dir: Path) -> dict[str, Any]:
    """Trains `cfg.task` for warmup + 1 + iterations iterations on `ranks` processes (with
    `cfg.train_args` added to the train command) and returns medians of the timed iterations
    (FPS are sums over ranks, as rank 0 logs them). The job's output goes to gpus-K/job.log; a
    job that outlives `cfg.job_timeout_s` is stopped (torchrun and its ranks) and reported."""
    mode, task, warmup = cfg.mode, cfg.task, cfg.warmup
    per_rank = envs_per_rank(mode, cfg.num_envs, ranks)
    row: dict[str, Any] = {"gpus": ranks, "envs_per_rank": per_rank, "total_envs": (per_rank or 0) * ranks}
    if per_rank is None:
        return {**row, "valid": False, "reason": f"{cfg.num_envs} envs do not split evenly over {ranks} ranks"}
    out = run_dir / f"gpus-{ranks}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.jsonl").unlink(missing_ok=True)  # the trainer appends: a re-run starts clean
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    # The user's train flags first: the bench's own (envs, iterations, run dir) come later and win.
    command += [
        "-m",
        "phalanx",
        "train",
        task,
        *split_args(cfg.train_args, "train_args"),
        "--distributed",
        "--device",
        device,
    ]
    command += ["--num-envs", str(per_rank), "--max-iterations", str(warmup + 1 + cfg.iterations)]
    command += ["--save-interval", "1000000", "--run-dir", str(out)]
    log = out / "job.log"
    with log.open("w") as stream:
        job = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = job.wait(timeout=cfg.job_timeout_s)
        except subprocess.TimeoutExpired:
            stop_job(job)
            return {**row, "valid": False, "reason": f"timed out after {cfg.job_timeout_s:.0f} s (see {log})"}
        except BaseException:  # Ctrl-C no longer reaches the job's own session: stop it here
            stop_job(job)
            raise
    if code != 0:
        tail = " / ".join(log.read_text().strip().splitlines()[-3:])
        return {**row, "valid": False, "reason": f"torchrun exited {code}: {tail}"}
    all_rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    frames = all_rows[0]["frames"]  # per iteration, summed over ranks
    rows = all_rows[warmup + 1 :]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    return {
        **row,
        "valid": True,
        "fps_step": median("fps_step"),
        "fps_step_inference": median("fps_step_inference"),
        "fps_total": median("fps_total"),
        "epoch_s": frames / median("fps_total"),
    }


def add_efficiency(results: list[dict[str, Any]]) -> None:
    """Speed-up and parallel efficiency of fps_total against the smallest valid rank count:
    efficiency = fps_total(k) / (k / k0 * fps_total(k0)), for strong and weak scaling alike."""
    valid = [r for r in results if r["valid"]]
    if not valid:
        return
    base = min(valid, key=lambda r: r["gpus"])
    for r in valid:
        r["speedup"] = r["fps_total"] / base["fps_total"]
        r["efficiency"] = r["speedup"] / (r["gpus"] / base["gpus"])


def table(results: list[dict[str, Any]]) -> str:
    """Seed 000's layout: GPUs | FPS step | step & inference FPS | FPS total | per-epoch time."""
    from phalanx.bench.markdown import markdown_table

    columns = ["GPUs", "envs per GPU", "FPS step", "step & inference FPS", "FPS total", "per-epoch time"]
    columns += ["speed-up", "efficiency"]
    rows = []
    for r in results:
        if not r["valid"]:
            rows.append([str(r["gpus"]), f"invalid: {r['reason']}"])
            continue
        rows.append(
            [str(r["gpus"]), str(r["envs_per_rank"]), f"{r['fps_step']:,.0f}", f"{r['fps_step_inference']:,.0f}"]
            + [
                f"{r['fps_total']:,.0f}",
                f"{r['epoch_s']:.3f} s",
                f"{r['speedup']:.2f}x",
                f"{100 * r['efficiency']:.0f} %",
            ]
        )
    return markdown_table(columns, rows)


def plot(run_dir: Path, results: list[dict[str, Any]]) -> Path | None:
    """FPS vs GPUs with the ideal line, efficiency vs GPUs, epoch time vs GPUs."""
    valid = [r for r in results if r["valid"]]
    if not valid:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gpus = [r["gpus"] for r in valid]
    base = valid[0]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for key in ("fps_step", "fps_step_inference", "fps_total"):
        axes[0].plot(gpus, [r[key] for r in valid], marker="o", label=key)
    axes[0].plot(gpus, [base["fps_total"] * g / base["gpus"] for g in gpus], "k--", label="ideal (fps_total)")
    axes[0].set(xlabel="GPUs", ylabel="env steps / s", title="throughput")
    axes[0].legend()
    axes[1].plot(gpus, [100 * r["efficiency"] for r in valid], marker="o")
    axes[1].set(xlabel="GPUs", ylabel="%", title="parallel efficiency", ylim=(0, 110))
    axes[2].plot(gpus, [r["epoch_s"] for r in valid], marker="o")
    axes[2].set(xlabel="GPUs", ylabel="s", title="time per training iteration")
    for ax in axes:
        ax.set_xticks(gpus)
    path = run_dir / "scaling.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
