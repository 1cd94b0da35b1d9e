"""Timing GPU work without syncing the host inside the loop."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch

FPS_NAMES = ("fps_step", "fps_step_inference", "fps_total")
"""Env steps per second of an iteration: inside the env step; the rollout (steps and inference);
the whole iteration (rollout and update)."""


@contextlib.contextmanager
def phase_range(name: str, torch_profiler: bool = False) -> Iterator[None]:
    """Marks a phase for profilers: an NVTX range (Nsight Systems) always on CUDA, and a torch
    profiler range when `torch_profiler` (only while profiling: graphs are never captured then).
    Host-side markers only: nothing is added to the GPU stream."""
    nvtx = torch.cuda.is_available()
    if nvtx:
        torch.cuda.nvtx.range_push(name)
    try:
        with torch.profiler.record_function(name) if torch_profiler else contextlib.nullcontext():
            yield
    finally:
        if nvtx:
            torch.cuda.nvtx.range_pop()


class IntervalTimer:
    """Sums the durations of begin()/end() intervals. On CUDA each interval is a pair of events
    recorded on the current stream (no sync); `seconds()` syncs once and adds them up."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self._seconds = 0.0
        self._start = None

    def begin(self) -> None:
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record(torch.cuda.current_stream(self.device))
        else:
            self._start = time.perf_counter()

    def end(self) -> None:
        if self.cuda:
            stop = torch.cuda.Event(enable_timing=True)
            stop.record(torch.cuda.current_stream(self.device))
            self._events.append((self._start, stop))
        else:
            self._seconds += time.perf_counter() - self._start

    def seconds(self) -> float:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            return self._seconds + sum(a.elapsed_time(b) for a, b in self._events) / 1e3
        return self._seconds
