"""Training configuration: the dataclass `phalanx train` turns into flags (per-task defaults are
registered with each task, see `phalanx.register`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

from phalanx.core.errors import ConfigError, check_int, check_positive, check_seed
from phalanx.core.files import check_path_length
from phalanx.envs.cfg import TaskCfg
from phalanx.rl.cfg import DistillCfg, PolicyCfg, PPOCfg
from phalanx.rl.off_policy_cfg import OffPolicyCfg, SACCfg, TD3Cfg
from phalanx.training.logger import check_logger
from phalanx.training.run_paths import checkpoint_file

TRAINERS = ("phalanx", "rsl_rl", "rl_games", "skrl", "sb3")
"""The RL libraries `--trainer` runs: phalanx's own PPO, or another library through its adapter in
`phalanx.wrappers` (each an extra: `pip install -e '.[rsl-rl]'`, ...)."""
MULTI_GPU_TRAINERS = ("phalanx", "rsl_rl", "rl_games", "skrl")
"""Those that train on several devices through torchrun (`--gpus N`): the libraries on CUDA GPUs only."""


@dataclass
class TrainCfg:
    """phalanx train: PPO on one device or several; a task registers its defaults as one of these."""

    task: Annotated[str, tyro.conf.Suppress] = ""
    """The task's name (`phalanx.register` sets it; the command line names it before the flags)."""
    num_envs: int | None = None
    """Parallel envs (per rank); default: the task's for the device (`env.num_envs` on a GPU,
    `env.cpu_num_envs` on the CPU)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    max_iterations: int = 150
    """PPO iterations (each: num_steps_per_env env steps, then the update)."""
    max_time_s: float | None = None
    """Stop once this many seconds of training have passed (the trainer's clock, `time_s` in
    metrics.jsonl: start-up not counted, the first iteration's compiles counted, a resumed run's
    earlier training counted), after the iteration that reaches them, saving a checkpoint as at
    `max_iterations`, whichever comes first; with several ranks, all stop after the same
    iteration. None: no time limit."""
    seed: int = 42
    """Seeds the env, the policy initialization and minibatch sampling."""
    run_dir: str | None = None
    """Where config.json, metrics.jsonl, checkpoints/ and TensorBoard events go; default runs/TASK/TIME."""
    resume: str | None = None
    """Checkpoint to continue from exactly (model, optimizer, normalizer, env state, RNG,
    iteration), or a run directory (its last checkpoint); 'last': run_dir/checkpoints/model_last.pt
    if it exists, else start fresh (for torchrun --max-restarts)."""
    num_steps_per_env: int = 16
    """Rollout length: env steps per env per iteration."""
    save_interval: int = 50
    """Write a checkpoint every this many iterations (and at the end)."""
    empirical_normalization: bool = False
    """Normalize observations with running statistics on the device."""
    spread_episode_ends: bool = False
    """A fresh run cuts each env's first episode at a random length (1 to the full episode's env
    steps, uniform; rsl_rl's init_at_random_ep_len): where episodes end only by time out they then
    end spread over the iterations instead of all at once, and every iteration logs their
    statistics. The cut episodes' returns and metrics cover the steps they ran."""
    cpu_num_envs: int | None = None
    """Deprecated (one release): the task's CPU env count is `TaskCfg.cpu_num_envs`; where set, it
    takes that place."""
    capture_update: bool | None = None
    """Record the whole PPO update as one CUDA graph and replay it (off-policy: each kind of
    gradient update, its batch drawn from the replay buffer included); default: on for CUDA."""
    capture_rollout: bool | None = None
    """Replay each rollout step's policy inference and bookkeeping (off-policy: acting, and
    storing into the replay buffer) as CUDA graphs (the env step has its own); default: on for
    CUDA."""
    tf32: bool = True
    """Policy inference and the PPO update multiply float32 matrices on TF32 tensor cores (GPUs
    from Ampere on: inputs rounded to 10 mantissa bits, sums in float32); `--no-tf32` keeps full
    float32. The env's own arithmetic is float32 either way."""
    bf16_update: bool = True
    """On CUDA, the update's network passes (PPO's forward and backward, the off-policy
    learners' forward) run under bfloat16 autocast: half the memory traffic of float32
    activations. The losses, their statistics, the optimizer and policy inference stay float32
    (TF32). `--no-bf16-update` keeps the update in float32."""
    compile_update: bool = True
    """On CUDA, torch.compile the update's minibatch losses, forward and backward: fused kernels
    instead of one per op. The compile takes seconds with an empty inductor cache; a second
    process does it while the env's step compiles, and the first update loads it from the cache."""
    distributed: bool = False
    """Run as one rank of a torchrun job: device cuda:LOCAL_RANK (or cpu with gloo), env seed
    seed + rank, gradients averaged over ranks, only rank 0 writes."""
    stall_timeout_s: float = 60.0
    """Distributed: a rank that makes no progress for this long (after its first iteration)
    stops the job and names the ranks behind."""
    startup_timeout_s: float = 600.0
    """Distributed: the same for slow phases (start-up: joining, building the env, compiling in
    the first iteration; writing a checkpoint), which may take minutes. Collectives time out
    after this plus twice `stall_timeout_s`."""
    gpus: str | None = None
    """Start `torch.distributed.run --standalone` with this many processes ('N' or 'all') and
    --distributed; on a machine without GPUs the processes train on the CPU (phalanx's trainer:
    the other libraries need a CUDA GPU per process)."""
    trainer: str = "phalanx"
    """The RL library that learns: phalanx (its own PPO), rsl_rl, rl_games, skrl or sb3
    (Stable-Baselines3), each with the task's PPO settings and network sizes, and the same run
    directory (metrics.jsonl with fps_step, fps_step_inference and fps_total, config.json,
    checkpoints/ in the library's own format, the dashboard)."""
    logger: str = "tensorboard"
    """Where the metrics go besides metrics.jsonl: tensorboard (events in the run directory),
    wandb (Weights & Biases; offline without a login, `wandb sync` uploads later) or none."""
    teacher: str | None = None
    """A trained policy whose actions this task's policy learns (a checkpoint of `phalanx train`,
    or its run directory), e.g. a state task's for its pixel twin: the teacher acts on its own
    task's observations, computed in this env from the same state, so both tasks must drive the
    same robot model with the same actions (`--distill.*`: the schedule)."""
    viewer: bool = False
    """Serve the training on a web page (`phalanx view`'s, `pip install -e ".[viewer]"`): each
    iteration's rollout of the first envs replayed in real time when the page is free, and the
    iteration's metrics as curves; the trainer never waits for it (rank 0 serves it)."""
    viewer_port: int = 8080
    """The viewer's port (0: any free one)."""
    viewer_host: str = "127.0.0.1"
    """The viewer's address: 127.0.0.1 serves this machine only (reach it over `ssh -L`), 0.0.0.0 every network."""
    distill: DistillCfg = field(default_factory=DistillCfg)
    algo: PPOCfg | TD3Cfg | SACCfg = field(default_factory=PPOCfg)
    """The algorithm's settings: PPO's (the default), FastTD3's (`--algo td3`) or FastSAC's (`--algo sac`)."""
    policy: PolicyCfg = field(default_factory=PolicyCfg)
    env: TaskCfg | None = None
    """The env to train on (`--env.FIELD`: any field of the task's config); `phalanx train TASK`
    starts from the registered one, `--resume` continues with the checkpoint's."""


def check_train_cfg(cfg: TrainCfg) -> None:
    """Raises ConfigError naming the first invalid field, its value and what is allowed: every
    check that needs no env, so that a bad flag fails before anything is built."""
    if cfg.num_envs is not None:
        check_int("num_envs", cfg.num_envs)
    for name in ("max_iterations", "num_steps_per_env", "save_interval"):
        check_int(name, getattr(cfg, name))
    if cfg.cpu_num_envs is not None:
        check_int("cpu_num_envs", cfg.cpu_num_envs)
    check_seed("seed", cfg.seed)
    if cfg.viewer:
        _check_viewer(cfg)
    if cfg.run_dir:
        check_path_length("run_dir", cfg.run_dir)
    if cfg.max_time_s is not None:
        check_positive("max_time_s", cfg.max_time_s, " seconds")
    check_positive("stall_timeout_s", cfg.stall_timeout_s, " seconds")
    check_positive("startup_timeout_s", cfg.startup_timeout_s, " seconds")
    if cfg.resume == "last" and not cfg.run_dir:
        raise ConfigError("--resume last: needs --run-dir (the run whose last checkpoint to continue)")
    if cfg.resume not in (None, "last"):
        checkpoint_file(cfg.resume, cfg.task, "resume")  # a run directory must hold a last checkpoint
    if cfg.trainer not in TRAINERS:
        raise ConfigError(f"got {cfg.trainer!r}; allowed: {', '.join(TRAINERS)}", "trainer")
    if cfg.trainer != "phalanx":
        if (cfg.gpus is not None or cfg.distributed) and cfg.trainer not in MULTI_GPU_TRAINERS:
            several = ", ".join(MULTI_GPU_TRAINERS)
            raise ConfigError(f"--trainer {cfg.trainer} trains on one device (on several: {several})", "gpus")
        if cfg.resume is not None:
            raise ConfigError(f"continues --trainer phalanx runs only, not --trainer {cfg.trainer}", "resume")
        if cfg.max_time_s is not None:
            raise ConfigError(f"stops phalanx's trainer only, not --trainer {cfg.trainer}", "max_time_s")
    check_logger(cfg.logger)
    if cfg.teacher is not None:
        if cfg.trainer != "phalanx":
            raise ConfigError(f"a teacher teaches with phalanx's trainer, not --trainer {cfg.trainer}", "teacher")
        if cfg.teacher == "last":
            raise ConfigError("'last' names this task's runs, not the teacher's: give its checkpoint or run", "teacher")
        teacher = checkpoint_file(cfg.teacher, cfg.task, "teacher")
        if not Path(teacher).is_file():
            raise ConfigError(f"no file {teacher}: a model_*.pt written by phalanx train, or its run", "teacher")
        cfg.distill.check()
    cfg.algo.check()
    if isinstance(cfg.algo, OffPolicyCfg):
        _check_off_policy(cfg)
    cfg.policy.check()
    if cfg.env is not None:
        cfg.env.check()


def _check_off_policy(cfg: TrainCfg) -> None:
    """--algo td3|sac: what the off-policy trainer does not do yet, refused in one line before anything is built."""
    algo = "td3" if isinstance(cfg.algo, TD3Cfg) else "sac"
    if cfg.trainer != "phalanx":
        raise ConfigError(f"--algo {algo} trains with phalanx's trainer, not --trainer {cfg.trainer}", "algo")
    for name, value, what in (
        ("teacher", cfg.teacher, "a teacher (distillation is PPO's)"),
        ("policy.image_group", cfg.policy.image_group, "image observations"),
    ):
        if value is not None:
            raise ConfigError(f"--algo {algo} does not support {what} yet; got {value!r}", name)
    if cfg.viewer:
        raise ConfigError(f"--algo {algo} does not serve the viewer yet", "viewer")


def move_cpu_num_envs(cfg: TrainCfg) -> bool:
    """Moves the deprecated `cfg.cpu_num_envs` to where the CPU env count lives, the env's
    `cpu_num_envs`; returns whether there was one (the caller says it is deprecated)."""
    if cfg.cpu_num_envs is None:
        return False
    cfg.env.cpu_num_envs, cfg.cpu_num_envs = cfg.cpu_num_envs, None
    return True


def _check_viewer(cfg: TrainCfg) -> None:
    """--viewer: phalanx's trainer, a port, and viser installed."""
    if cfg.trainer != "phalanx":
        raise ConfigError(f"the viewer watches phalanx's trainer, not --trainer {cfg.trainer}", "viewer")
    from phalanx.viewer.address import check_serving

    check_serving(cfg.viewer_port, "viewer_port", "--viewer")
