"""The flags of each `phalanx bench` command, as the dataclasses tyro turns into them."""

from __future__ import annotations

from dataclasses import dataclass

import tyro


@dataclass
class BenchCfg:
    """phalanx bench throughput|envs: train a task with its defaults and time it."""

    task: str
    """Registered task name."""
    num_envs: str = "4096,16384"
    """Comma-separated env counts (bench envs defaults to 256 ... 65536)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 20
    """Timed training iterations per env count (medians are reported)."""
    warmup: int = 3
    """Untimed iterations after the first (graph captures happen here on CUDA)."""
    num_steps_per_env: int | None = None
    """Rollout length; default: the task's training default."""
    train_args: str = ""
    """`phalanx train` flags that change the task or its training, as one string after `=`:
    --train-args="--env.observations.image.rgb.params.width 128"."""
    run_dir: str | None = None
    """Where bench.json, report.md and the plots go; default runs/bench/KIND-TASK-TIME."""
    telemetry: bool = False
    """Sample GPU (NVML) and CPU load in the background into gpu_metrics.csv and cpu_metrics.csv."""
    telemetry_interval_s: float = 0.5
    """Seconds between telemetry samples."""
    profile: int = 0
    """After the timed iterations, run this many more under the torch profiler and write a Chrome
    trace per env count (trace-ENVS.json; open in chrome://tracing or Perfetto)."""


@dataclass
class ScalingCfg:
    """phalanx bench scaling: the same training job under torchrun with several process counts."""

    task: str
    """Registered task name."""
    mode: str = "weak"
    """'strong': num_envs in all, split over the GPUs; 'weak': num_envs on every GPU."""
    gpus: str = "1,2,4"
    """Comma-separated process (GPU) counts; each runs one torchrun --standalone job."""
    num_envs: int = 4096
    """Total envs (strong) or envs per GPU (weak)."""
    device: str | None = None
    """'cpu' runs the processes on the CPU with gloo; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 20
    """Timed training iterations per process count (medians are reported)."""
    warmup: int = 3
    """Untimed iterations after the first."""
    train_args: str = ""
    """More flags for every `phalanx train` job, as one string after `=`:
    --train-args="--capture-update False"."""
    job_timeout_s: float = 900.0
    """Stop a job (torchrun and all its ranks) that runs longer than this and report it."""
    run_dir: str | None = None
    """Where bench.json, report.md, scaling.png and each job's run directory go."""
    telemetry: bool = False
    """Sample GPU (NVML) and CPU load in the background into gpu_metrics.csv and cpu_metrics.csv."""


@dataclass
class StartupCfg:
    """phalanx bench startup: launch to the end of the first training iteration, by phase, with
    cold caches and then warm."""

    task: str
    """Registered task name."""
    num_envs: int | None = None
    """Envs; default: what `phalanx train` uses (the task's default on a GPU, its CPU count on the CPU)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    runs: str = "cold,warm"
    """Comma-separated, in order: 'cold' empties the caches first, 'warm' uses them as left. A kind
    given more than once ('cold,warm,warm,warm') also gets its median, with the range."""
    cache_dir: str | None = None
    """Where the runs' Warp, inductor, Triton and CUDA caches go (its warp/, inductor/, triton/ and
    cuda/, which a cold run empties); default: a temporary directory, removed at the end."""
    run_dir: str | None = None
    """Where bench.json, report.md and each run's log go; default runs/bench/startup-TASK-TIME."""


@dataclass
class CompareCfg:
    """phalanx bench compare: the task trained by each RL library in turn, same envs and PPO settings."""

    task: str
    """Registered task name."""
    trainers: str = "phalanx,rsl_rl,rl_games,skrl,sb3"
    """Comma-separated trainers (`phalanx train --trainer`), each run in a fresh process."""
    num_envs: int = 4096
    """Envs for every trainer."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 100
    """Training iterations per trainer."""
    gpus: str = "1"
    """Comma-separated GPU counts: each trainer runs on each, N > 1 as `phalanx train --gpus N`
    (N processes of `num_envs` envs each, cuda:0 to cuda:N-1); Stable-Baselines3 on one only."""
    warmup: int = 3
    """Iterations after the first that the fps medians leave out."""
    metric: str | None = None
    """The metrics.jsonl key whose threshold counts as learned; default: the task's (cartpole
    mean_episode_length, ant and humanoid mean_reward)."""
    threshold: float | None = None
    """Reached when the metric is >= this; default: the task's (cartpole 285 of 300 steps, ant 100, humanoid 50)."""
    train_args: str = ""
    """More `phalanx train` flags for every trainer, as one string after `=`."""
    warm_caches: bool = True
    """First run one iteration of `phalanx train` (not timed) on each GPU count, so that Warp's
    kernel cache and torch's compile caches are warm for every trainer alike; off: the first
    trainer pays them."""
    job_timeout_s: float = 1800.0
    """Stop a trainer's process that runs longer than this and report it."""
    stall_timeout_s: float = 120.0
    """Stop a trainer's process whose metrics.jsonl gets no new row for this long once its first
    row is in (before it, start-up's compiles are bounded by `job_timeout_s` alone) and report it."""
    run_dir: str | None = None
    """Where bench.json, report.md, compare.png and each trainer's run go; bench.json and
    report.md are rewritten after each trainer, so a compare cut short keeps what it measured."""


@dataclass
class LearnCfg:
    """phalanx bench learn: train each task from launch with several seeds, each in a fresh
    process, until it reaches the result its registration declares or its budget runs out."""

    seeds: int = 3
    """Warm runs per task, with seeds S .. S+K-1 (S: --first-seed); a task passes when two thirds
    of them reach its threshold."""
    first_seed: int = 0
    """The first seed: a later suite adds seeds to an earlier one's (e.g. --seeds 2 --first-seed 1
    after a suite of --seeds 1)."""
    algos: str = "ppo"
    """Comma-separated algorithms each task trains with (`phalanx train --algo`: ppo, td3, sac),
    each judged on its own, side by side in one run: e.g. 'ppo,td3'."""
    gpus: str | None = None
    """Comma-separated CUDA device indices, one job on each at a time; default: every visible GPU."""
    device: str | None = None
    """'cuda' or 'cpu'; default: cuda when a GPU is visible, else cpu."""
    cpu_jobs: int = 1
    """On the CPU: jobs at a time."""
    cold: bool = True
    """First one more run per task (seed 0) with its caches emptied: a fresh machine's start; its
    caches then serve the warm runs. --no-cold: every run uses the caches as they are."""
    budget_s: float | None = None
    """Seconds of wall clock from launch that every job may take; default: each task's own budget."""
    metric: str | None = None
    """The metrics.jsonl key to reach instead of the task's (with one task)."""
    threshold: float | None = None
    """The value to reach instead of the task's (with one task)."""
    direction: str | None = None
    """'>=' or '<=' instead of the task's (with one task)."""
    window: int = 5
    """The metric counts as the moving mean over this many rows that carry it."""
    videos: str = "each"
    """Videos of the trained policies, played after every job is done: 'each' run, each task's
    'first' warm seed, or 'none'."""
    video_s: float = 10.0
    """Seconds of simulated time per video (at most one episode)."""
    train_args: str = ""
    """More `phalanx train` flags for every job, as one string after `=`."""
    cache_dir: str | None = None
    """Where each task's Warp, inductor, Triton and CUDA caches go (CACHE/TASK/...); default: the run
    directory's cache/. A cold run empties its task's."""
    run_dir: str | None = None
    """Where bench.json, report.md, the plots, videos/ and each job's run go; bench.json is
    rewritten after each job, so a suite cut short keeps what it measured."""


@dataclass
class ReportCfg:
    """phalanx bench report: rebuild the report of a run, or compare several runs."""

    run_dirs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories holding bench.json."""
    out: str = "runs/bench/comparison"
    """Where the comparison of several runs goes."""


@dataclass
class DocsCfg:
    """phalanx bench docs: rebuild the tables of docs pages from the raw results their markers name."""

    pages: tyro.conf.Positional[tuple[str, ...]] = ("docs",)
    """The markdown pages, or folders: their pages that hold tables (results/ aside)."""
    check: bool = False
    """Rebuild nothing; exit 1 where a page's tables differ from what its raw results give."""
