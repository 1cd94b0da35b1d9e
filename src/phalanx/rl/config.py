"""Training configuration: the dataclasses `phalanx train` turns into flags, and per-task defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.errors import ConfigError, check_int, check_positive
from phalanx.rl.models import ACTIVATIONS
from phalanx.rl.ppo import PPOCfg
from phalanx.sim import SimCfg


@dataclass
class PolicyCfg:
    """Actor-critic network."""

    actor_hidden_dims: tuple[int, ...] = (256, 128, 64)
    """Hidden layer widths of the actor MLP."""
    critic_hidden_dims: tuple[int, ...] = (256, 128, 64)
    """Hidden layer widths of the critic MLP."""
    activation: str = "elu"
    """Activation between layers: elu, relu, tanh, selu or silu."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian policy."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`policy.FIELD`), its value and what is allowed."""
        for name in ("actor_hidden_dims", "critic_hidden_dims"):
            for width in getattr(self, name):
                check_int(f"policy.{name}", width)
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"got {self.activation!r}; allowed: {', '.join(ACTIVATIONS)}", "policy.activation")
        check_positive("policy.init_noise_std", self.init_noise_std)


@dataclass
class TrainCfg:
    """phalanx train: PPO on one device."""

    task: str
    """Registered task name (see `phalanx list`)."""
    num_envs: int | None = None
    """Parallel envs; default: the task's GPU default, or `cpu_num_envs` on the CPU."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    max_iterations: int = 150
    """PPO iterations (each: num_steps_per_env env steps, then the update)."""
    seed: int = 42
    """Seeds the env, the policy initialization and minibatch sampling."""
    run_dir: str | None = None
    """Where config.json, metrics.jsonl, checkpoints/ and TensorBoard events go; default runs/TASK/TIME."""
    resume: str | None = None
    """Checkpoint to continue from exactly (model, optimizer, normalizer, env state, RNG,
    iteration); 'last': run_dir/checkpoints/model_last.pt if it exists, else start fresh (for
    torchrun --max-restarts)."""
    num_steps_per_env: int = 16
    """Rollout length: env steps per env per iteration."""
    save_interval: int = 50
    """Write a checkpoint every this many iterations (and at the end)."""
    empirical_normalization: bool = False
    """Normalize observations with running statistics on the device."""
    cpu_num_envs: int = 256
    """Default num_envs when running on the CPU."""
    capture_update: bool | None = None
    """Record the whole PPO update as one CUDA graph and replay it; default: on for CUDA."""
    capture_rollout: bool | None = None
    """Replay each rollout step's policy inference and bookkeeping as CUDA graphs (the env step
    has its own); default: on for CUDA."""
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
    --distributed; on a machine without GPUs the processes train on the CPU."""
    low_level_checkpoint: str | None = None
    """Tasks whose actions command a frozen policy (anymal-nav): that policy's checkpoint, a
    model_*.pt written by `phalanx train` on its task (anymal-flat)."""
    algo: PPOCfg = field(default_factory=PPOCfg)
    policy: PolicyCfg = field(default_factory=PolicyCfg)
    sim: SimCfg = field(default_factory=SimCfg)
    """Physics settings; `phalanx train` starts from the task's own."""


def check_train_cfg(cfg: TrainCfg) -> None:
    """Raises ConfigError naming the first invalid field, its value and what is allowed: every
    check that needs no env, so that a bad flag fails before anything is built."""
    if cfg.num_envs is not None:
        check_int("num_envs", cfg.num_envs)
    for name in ("max_iterations", "num_steps_per_env", "save_interval", "cpu_num_envs"):
        check_int(name, getattr(cfg, name))
    check_positive("stall_timeout_s", cfg.stall_timeout_s, " seconds")
    check_positive("startup_timeout_s", cfg.startup_timeout_s, " seconds")
    cfg.algo.check()
    cfg.policy.check()
    cfg.sim.check()


def default_train_cfg(task: str) -> TrainCfg:
    """Per-task defaults that learn out of the box (rsl_rl's settings for the Isaac Lab tasks)."""
    if task == "cartpole":
        return TrainCfg(
            task=task,
            max_iterations=150,
            num_steps_per_env=16,
            cpu_num_envs=256,
            policy=PolicyCfg(actor_hidden_dims=(32, 32), critic_hidden_dims=(32, 32)),
            algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
        )
    if task in ("anymal-flat", "anymal-rough"):  # rsl_rl's AnymalC{Flat,Rough}PPORunnerCfg
        hidden = (128, 128, 128) if task == "anymal-flat" else (512, 256, 128)
        return TrainCfg(
            task=task,
            max_iterations=300 if task == "anymal-flat" else 1500,
            num_steps_per_env=24,
            cpu_num_envs=256,
            policy=PolicyCfg(actor_hidden_dims=hidden, critic_hidden_dims=hidden),
            algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
        )
    if task == "anymal-nav":  # rsl_rl's NavigationEnvPPORunnerCfg
        return TrainCfg(
            task=task,
            max_iterations=1500,
            num_steps_per_env=8,
            cpu_num_envs=256,
            policy=PolicyCfg(actor_hidden_dims=(128, 128), critic_hidden_dims=(128, 128), init_noise_std=0.5),
            algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
        )
    if task in ("ant", "humanoid"):
        return TrainCfg(
            task=task,
            max_iterations=1000,
            num_steps_per_env=32,
            cpu_num_envs=256,
            empirical_normalization=True,
            policy=PolicyCfg(actor_hidden_dims=(400, 200, 100), critic_hidden_dims=(400, 200, 100)),
            algo=PPOCfg(learning_rate=5e-4, entropy_coef=0.0),
        )
    return TrainCfg(task=task)
