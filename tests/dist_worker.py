"""One rank of the distributed tests (launched by tests/test_distributed.py through torchrun).

python -m torch.distributed.run --nproc_per_node 2 tests/dist_worker.py MODE OUT_DIR
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import torch
import warp as wp
from rich.console import Console

from phalanx.dist import init_distributed
from phalanx.envs import make
from phalanx.rl.config import default_train_cfg
from phalanx.rl.trainer import Trainer


def train(ctx, out: Path, iterations: int, die_after: int | None = None) -> None:
    cfg = default_train_cfg("cartpole")
    cfg.num_steps_per_env = 8
    env = make("cartpole", num_envs=16, device="cpu", seed=cfg.seed + ctx.rank, verbose=False)
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True), dist=ctx)
    for i in range(iterations):
        if die_after is not None and ctx.rank == 1 and i == die_after:
            os._exit(3)
        trainer._iterate()
    torch.save(trainer.policy.state_dict(), out / f"params{ctx.rank}.pt")


def grads(ctx, out: Path) -> None:
    """Each rank backpropagates its quarter of a fixed batch; rank 0 also the whole batch alone."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    ctx.broadcast_module(model)
    data = torch.randn(8 * ctx.world_size, 5, generator=torch.Generator().manual_seed(1))
    reference = copy.deepcopy(model)
    model(data[8 * ctx.rank : 8 * (ctx.rank + 1)]).square().mean().backward()
    ctx.average_gradients(list(model.parameters()))
    torch.save([p.grad for p in model.parameters()], out / f"grads{ctx.rank}.pt")
    if ctx.rank == 0:
        reference(data).square().mean().backward()
        torch.save([p.grad for p in reference.parameters()], out / "grads_single.pt")


def main() -> None:
    wp.config.log_level = wp.LOG_WARNING
    mode, out = sys.argv[1], Path(sys.argv[2])
    ctx, _ = init_distributed("cpu", timeout_s=30)
    if mode == "train":
        train(ctx, out, iterations=4)
    elif mode == "die":
        train(ctx, out, iterations=50, die_after=1)
    elif mode == "grads":
        grads(ctx, out)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
