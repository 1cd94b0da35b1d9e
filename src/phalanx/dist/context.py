"""torch.distributed for phalanx: rank and device from torchrun's environment, parameter
broadcast, flattened gradient all-reduce, and sums over ranks. With one process (no torchrun)
every call is the identity, so single-device training runs the same code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from phalanx.errors import ConfigError


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in the job."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, writes checkpoints and videos."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Copies rank 0's parameters and buffers into every rank's module, in place."""
        if self.active:
            for tensor in (*module.parameters(), *module.buffers()):
                dist.broadcast(tensor.data, src=0)

    def average_gradients(self, params: list[torch.nn.Parameter]) -> None:
        """Replaces each gradient by its mean over ranks: one all-reduce of the flattened gradients."""
        if not self.active:
            return
        grads = [p.grad for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= self.world_size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sums `tensor` over ranks in place and returns it."""
        if self.active:
            dist.all_reduce(tensor)
        return tensor

    def mean_(self, tensor: torch.Tensor) -> torch.Tensor:
        """Averages `tensor` over ranks in place and returns it."""
        if self.active:
            dist.all_reduce(tensor)
            tensor /= self.world_size
        return tensor


def init_distributed(device: str | None, timeout_s: float = 60.0) -> tuple[DistContext, str | None]:
    """Joins the torchrun job (NCCL on CUDA, gloo on CPU) and returns the context and the device
    this rank uses (cuda:LOCAL_RANK on GPUs). A rank that waits longer than `timeout_s` for the
    others fails instead of hanging."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise ConfigError("--distributed: run under torchrun (python -m torch.distributed.run ...), or use --gpus N")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    use_cuda = device != "cpu" and torch.cuda.is_available()
    if use_cuda:
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(local_rank)
    else:
        device = "cpu"
    dist.init_process_group("nccl" if use_cuda else "gloo", timeout=timedelta(seconds=timeout_s))
    return DistContext(rank=rank, local_rank=local_rank, world_size=world), device
