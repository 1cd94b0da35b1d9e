"""Stops a distributed job whose ranks stall, naming the ranks that are behind.

Every rank publishes a progress counter (the trainer counts env steps and updates) to the job's
key-value store once a second from a background thread. A rank whose own counter has not moved
for `timeout_s` (once it has moved past `warmup`: compilation is not a stall) reads every rank's counter,
prints which ranks are behind, and exits; torchrun then stops the rest. This works where the
backends' own timeouts cannot: a rank stuck outside any collective, or ranks blocked inside
collectives that a CUDA graph replays.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

from phalanx.dist.context import DistContext


class StallWatchdog:
    """Context manager around a training loop; `progress()` returns this rank's counter."""

    def __init__(
        self, ctx: DistContext, progress: Callable[[], int], timeout_s: float, warmup: int = 0, poll_s: float = 1.0
    ):
        self.ctx, self.progress, self.timeout_s, self.poll_s = ctx, progress, timeout_s, poll_s
        self.warmup = warmup
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="phalanx-stall-watchdog", daemon=True)

    def __enter__(self) -> StallWatchdog:
        if self.ctx.active and self.ctx.store is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _key(self, rank: int) -> str:
        return f"progress/{rank}"

    def _run(self) -> None:
        try:
            self._watch()
        except Exception as error:  # noqa: BLE001 (a lost store must not take the training down)
            print(f"phalanx train: rank {self.ctx.rank}: stall watchdog stopped: {error}", file=sys.stderr, flush=True)

    def _watch(self) -> None:
        last, changed_at = self.progress(), time.monotonic()
        armed_at = last + self.warmup
        while not self._stop.wait(self.poll_s):
            value = self.progress()
            self.ctx.store.set(self._key(self.ctx.rank), str(value))
            now = time.monotonic()
            if value != last:
                last, changed_at = value, now
            elif last > armed_at and now - changed_at > self.timeout_s:
                print(self.report(value, now - changed_at), file=sys.stderr, flush=True)
                os._exit(1)

    def report(self, value: int, stalled_s: float) -> str:
        """One line: how long this rank has stalled and which ranks are behind it."""
        counters = {}
        for rank in range(self.ctx.world_size):
            key = self._key(rank)
            if self.ctx.store.check([key]):
                counters[rank] = int(self.ctx.store.get(key))
        head = f"phalanx train: rank {self.ctx.rank}: no progress for {stalled_s:.0f} s"
        silent = [r for r in range(self.ctx.world_size) if r not in counters]
        top = max(counters.values(), default=value)
        behind = [r for r, v in counters.items() if v < top]
        if silent:
            return f"{head}; rank(s) {_ranks(silent)} never reported progress: stopping"
        if behind:
            return f"{head}; rank(s) {_ranks(behind)} stopped behind the others: stopping the job"
        return f"{head}; every rank stopped at the same point (a hang inside a collective?): stopping the job"


def _ranks(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)
