"""Data-parallel training through torchrun: one process per device, gradients averaged."""

from phalanx.dist.context import DistContext, init_distributed

__all__ = ["DistContext", "init_distributed"]
