"""Data-parallel training through torchrun: one process per device, gradients averaged."""

from phalanx.dist.context import DistContext, init_distributed
from phalanx.dist.watchdog import Progress, StallWatchdog

__all__ = ["DistContext", "Progress", "StallWatchdog", "init_distributed"]
