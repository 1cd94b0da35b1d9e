"""Data-parallel training through torchrun: one process per device, gradients averaged."""

from phalanx.dist.context import DistContext, end_rank, init_distributed, library_rank
from phalanx.dist.watchdog import Progress, StallWatchdog

__all__ = ["DistContext", "Progress", "StallWatchdog", "end_rank", "init_distributed", "library_rank"]
