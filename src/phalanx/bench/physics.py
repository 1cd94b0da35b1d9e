"""The raw physics limit: MuJoCo Warp stepping a Simulator and nothing else; and the benchmarks' timers."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from phalanx.sim import Simulator


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn: Callable[[], object], calls: int, device: torch.device) -> float:
    """Mean seconds per call of fn over `calls` calls, synchronized at both ends."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / calls


def captured_seconds(fn: Callable[[], object], device: torch.device, replays: int = 50) -> float:
    """Seconds per replay of `fn` captured in a CUDA graph (after 3 eager warm-up calls)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / replays


def physics_steps_per_s(sim: Simulator, calls: int, repeats: int, random_ctrl: bool) -> float:
    """Physics steps per second of `sim.step()` (decimation substeps per call) over all worlds:
    the median of `repeats` blocks of `calls` calls, each block from the default state. Zero
    controls give the limit; uniform random controls in [-1, 1] show what flailing costs.
    Leaves the worlds in whatever state the last block reached: reset them afterwards."""
    all_worlds = torch.ones(sim.num_envs, dtype=torch.bool, device=sim.device)

    def physics() -> None:
        if random_ctrl:
            sim.ctrl.uniform_(-1.0, 1.0)
        sim.step()

    times = []
    for _ in range(repeats):
        sim.reset_(all_worlds)
        for _ in range(5):
            physics()
        times.append(seconds_per_call(physics, calls, sim.device))
    return sim.num_envs * sim.cfg.decimation / statistics.median(times)
