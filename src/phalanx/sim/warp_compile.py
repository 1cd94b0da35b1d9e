"""Compiles every Warp module a piece of Warp work launches at once, on a thread pool, before the
work first runs.

Warp loads a module lazily, at the first launch of one of its kernels, so the first physics step
compiles its 33-44 modules one after another: 44-118 s of a cold start on an H100. MuJoCo Warp
creates most of its kernels for the model during that first call (in modules of their own), so the
modules cannot be listed before it. `compile_launched` runs the work's Python once as a dry run in
which loading a module only records it (no kernel runs: Warp skips the launch of a kernel whose
module did not load), then loads every recorded module in parallel. The work's next real run finds
them all loaded.

The dry run is not free of side effects: Warp operations that are not kernels (copies, fills,
scans) still run, so the caller restores any state they may touch."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import warp as wp

# (module, block_dim) pairs a dry run asked Warp to load.
Loads = dict[tuple[wp.Module, int | None], None]


def default_workers() -> int:
    """Compile threads: the CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def _dry_run(loads: Loads) -> Iterator[None]:
    """Within it, a module load records the module and fails softly (the launch is skipped); loops
    and branches on device values (`wp.capture_while`, `wp.capture_if`) run their bodies once, and
    occupancy queries answer without a loaded module."""

    def record(module: wp.Module, device: object, block_dim: int | None = None, *args: object, **kw: object) -> None:
        loads[module, block_dim] = None

    def once(condition: object, while_body: Callable[..., None], stream: object = None, **kwargs: object) -> None:
        if callable(while_body):
            while_body(**kwargs)

    def both(condition: object, on_true: object = None, on_false: object = None, stream: object = None, **kwargs):
        for branch in (on_true, on_false):
            if callable(branch):
                branch(**kwargs)

    patched = {"capture_while": once, "capture_if": both, "get_suggested_block_size": lambda *a, **k: (256, 1)}
    saved_load, saved = wp.Module.load, {name: getattr(wp, name) for name in patched}
    wp.Module.load = record
    for name, fn in patched.items():
        setattr(wp, name, fn)
    try:
        yield
    finally:
        wp.Module.load = saved_load
        for name, fn in saved.items():
            setattr(wp, name, fn)


def compile_launched(work: Callable[[], None], device: wp.Device, max_workers: int | None = None) -> int:
    """Compiles (or loads from Warp's kernel cache) every module `work` launches a kernel of, on
    `max_workers` threads (default: every usable core), without running its kernels. Returns how
    many module variants were asked for."""
    loads: Loads = {}
    with wp.ScopedDevice(device), _dry_run(loads):
        work()
    workers = max_workers if max_workers is not None else default_workers()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [
            pool.submit(wp.force_load, device, [module], block_dim, 0)  # each load serial; the pool is parallel
            for module, block_dim in loads
        ]
        for future in futures:
            future.result()
    return len(loads)
