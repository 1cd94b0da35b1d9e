"""One rank of the distributed tests (launched by tests/distributed/test_distributed.py through torchrun).

python -m torch.distributed.run --nproc_per_node 2 tests/dist_worker.py MODE OUT_DIR [DEVICE]

DEVICE 'cuda' trains on cuda:LOCAL_RANK with NCCL and the trainer's CUDA graphs; default cpu (gloo).
With a cartpole run in OUT_DIR/teacher, the policy trained is its student (`--teacher`).

python -m torch.distributed.run --nproc_per_node 2 tests/dist_worker.py cli WHAT -- TRAIN_FLAGS

runs `phalanx train TRAIN_FLAGS` on every rank with WHAT: rank 1 hangs forever building its env
('hang-env') or in its first env step ('hang-step'), rank 0 takes 8 s to write its first
checkpoint ('slow-save'), or an RL library's job runs on the CPU ('library-on-gloo': the NCCL
group the library starts becomes a gloo group, and each rank takes the CPU instead of its GPU;
'library-on-gloo-hang': the same, and rank 1 hangs forever in its 20th env step).
"""

from __future__ import annotations

import copy
import os
import sys
import time
from pathlib import Path

import torch
import warp as wp
from rich.console import Console

from phalanx.dist import StallWatchdog, init_distributed
from phalanx.rl.cfg import DistillCfg
from phalanx.training import registry
from phalanx.training.registry import make, train_cfg
from phalanx.training.teacher import load_teacher, with_teacher_observations
from phalanx.training.trainer import Trainer


def train(
    ctx,
    out: Path,
    device: str,
    iterations: int,
    die_after: int | None = None,
    hang_after: int | None = None,
    capture: bool = True,
) -> None:
    cfg = train_cfg("cartpole")
    if not capture:
        cfg.capture_update = cfg.capture_rollout = False
    cfg.num_steps_per_env = 8
    cfg.empirical_normalization = True  # its statistics are merged over ranks too
    num_envs = 16 if device == "cpu" else 512
    env_cfg, teacher = registry.env_cfg("cartpole"), None
    if (out / "teacher").is_dir():  # a student: 2 iterations of imitation (the teacher's share), then PPO
        teacher = load_teacher(str(out / "teacher"), env_cfg, registry.term_packages())
        env_cfg = with_teacher_observations(env_cfg, teacher)
        cfg.distill = DistillCfg(iterations=2, mix_iterations=2)
    env = make(env_cfg, num_envs=num_envs, device=device, seed=cfg.seed + ctx.rank, verbose=False)
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True), dist=ctx, teacher=teacher)
    with StallWatchdog(ctx, trainer.progress, timeout_s=5, startup_timeout_s=60):
        for i in range(iterations):
            if die_after is not None and ctx.rank == 1 and i == die_after:
                os._exit(3)
            if hang_after is not None and ctx.rank == 1 and i == hang_after:
                time.sleep(3600)  # alive, but never reaches the next collective
            trainer.iterate()
    state = {
        **trainer.policy.state_dict(),
        **{f"obs_norm.{k}": v for k, v in trainer.ppo.obs_norm.state_dict().items()},
    }
    torch.save({name: tensor.cpu() for name, tensor in state.items()}, out / f"params{ctx.rank}.pt")
    if teacher is not None:  # what the teacher did on this rank's last rollout
        torch.save(trainer.ppo.storage.teacher_actions.cpu(), out / f"taught{ctx.rank}.pt")


def off_policy(ctx, out: Path, algo: str) -> None:
    """`--algo td3|sac` on cartpole for 3 iterations (updates from the second on); each rank
    saves its actor's and critics' parameters and its normalizer."""
    from phalanx.training.off_policy import OffPolicyTrainer
    from phalanx.training.registry import algo_cfg

    cfg = train_cfg("cartpole")
    cfg.algo = algo_cfg("cartpole", algo)
    cfg.algo.batch_size, cfg.algo.buffer_size, cfg.algo.learning_starts = 64, 100, 4
    cfg.algo.actor_hidden_dims, cfg.algo.critic_hidden_dims = (16,), (16,)
    cfg.num_steps_per_env, cfg.empirical_normalization = 4, True
    env = make(registry.env_cfg("cartpole"), num_envs=16, device="cpu", seed=cfg.seed + ctx.rank, verbose=False)
    trainer = OffPolicyTrainer(cfg, env, run_dir=None, console=Console(quiet=True), dist=ctx)
    for _ in range(3):
        trainer.iterate()
    learner = trainer.learner
    state = {
        **{f"actor.{k}": v for k, v in learner.actor.state_dict().items()},
        **{f"critic.{k}": v for k, v in learner.critic.state_dict().items()},
        **{f"target.{k}": v for k, v in learner.target_critic.state_dict().items()},
        **{f"obs_norm.{k}": v for k, v in learner.obs_norm.state_dict().items()},
        "buffer_actions": trainer.buffer.actions,
    }
    torch.save(state, out / f"params{ctx.rank}.pt")


def grads(ctx, out: Path) -> None:
    """Each rank backpropagates its quarter of a fixed batch; rank 0 also the whole batch alone."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    ctx.broadcast_module(model)
    data = torch.randn(8 * ctx.world_size, 5, generator=torch.Generator().manual_seed(1))
    reference = copy.deepcopy(model)
    model(data[8 * ctx.rank : 8 * (ctx.rank + 1)]).square().mean().backward()
    extra = ctx.average_gradients(list(model.parameters()), torch.tensor([float(ctx.rank), 1.0]))
    torch.save([p.grad for p in model.parameters()], out / f"grads{ctx.rank}.pt")
    torch.save(extra, out / f"extra{ctx.rank}.pt")
    if ctx.rank == 0:
        reference(data).square().mean().backward()
        torch.save([p.grad for p in reference.parameters()], out / "grads_single.pt")


def cli(what: str, flags: list[str]) -> int:
    """`phalanx train` as the user runs it, with one rank stuck or slow."""
    from phalanx import cli
    from phalanx.envs.task_env import TaskEnv
    from phalanx.training import registry, trainer

    rank = int(os.environ["RANK"])
    if what == "hang-env" and rank == 1:
        registry.make = lambda *args, **kwargs: time.sleep(3600)
    elif what == "hang-step" and rank == 1:
        TaskEnv.step = lambda self, actions: time.sleep(3600)
    elif what == "slow-save" and rank == 0:
        write = trainer.save_checkpoint

        def slow_first_save(path, state, *copies) -> None:
            if state["iteration"] == 1 and path.name == "model_last.pt":
                time.sleep(8)
            write(path, state, *copies)

        trainer.save_checkpoint = slow_first_save
    elif what.startswith("library-on-gloo"):
        _library_on_gloo()
        if what == "library-on-gloo-hang" and rank == 1:
            step, calls = TaskEnv.step, []

            def hang_in_step_20(self, actions):
                calls.append(None)
                if len(calls) == 20:
                    time.sleep(3600)
                return step(self, actions)

            TaskEnv.step = hang_in_step_20
    return cli.main(["train", *flags])


def _library_on_gloo() -> None:
    import phalanx.dist
    from phalanx.dist.context import library_context

    start_group = torch.distributed.init_process_group
    torch.distributed.init_process_group = lambda backend=None, *args, **kwargs: start_group("gloo", *args, **kwargs)
    torch.cuda.set_device = lambda device: None
    ranks = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"])
    phalanx.dist.library_rank = lambda trainer, timeout_s: (library_context(*ranks, timeout_s), "cpu")


def main() -> None:
    wp.config.log_level = wp.LOG_WARNING
    if sys.argv[1] == "cli":
        sys.exit(cli(sys.argv[2], sys.argv[4:]))
    mode, out = sys.argv[1], Path(sys.argv[2])
    ctx, device = init_distributed(sys.argv[3] if len(sys.argv) > 3 else "cpu", timeout_s=60)
    if mode == "train":
        # On CUDA the rollout and update graphs are captured in iteration 2, so 6 iterations
        # replay graphs with NCCL collectives inside several times.
        train(ctx, out, device, iterations=4 if device == "cpu" else 6)
    elif mode == "hang":
        train(ctx, out, device, iterations=50, hang_after=1)
    elif mode == "train-eager":
        train(ctx, out, device, iterations=6, capture=False)
    elif mode == "die":
        train(ctx, out, device, iterations=50, die_after=1)
    elif mode == "grads":
        grads(ctx, out)
    elif mode in ("td3", "sac"):
        off_policy(ctx, out, mode)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
