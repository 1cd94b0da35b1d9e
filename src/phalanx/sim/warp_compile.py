"""Compiles the Warp modules a piece of Warp work launches on a thread pool, in the background,
before the work first runs.

Warp loads a module lazily, at the first launch of one of its kernels, and MuJoCo Warp creates
most of its kernels during that first call, so the modules cannot be listed beforehand.
`record_loads` runs the work's Python once as a dry run in which loading a module only records it
(Warp skips a kernel whose module did not load); a `ModuleLoader` then loads the recorded modules
on a thread pool while the caller goes on. Warp operations that are not kernels (copies, fills,
scans) still run in the dry run, so the caller restores any state they may touch."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import warp as wp

# (module, block_dim) pairs a dry run asked Warp to load.
Loads = dict[tuple[wp.Module, int | None], None]


def default_workers() -> int:
    """Compile threads: the CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def _dry_run(loads: Loads) -> Iterator[None]:
    """Within it, a module load on this thread records the module and fails softly (the launch is
    skipped; loads on other threads, e.g. a `ModuleLoader`'s, go on as usual); loops and branches on
    device values (`wp.capture_while`, `wp.capture_if`) run their bodies once, and occupancy queries
    answer without a loaded module."""
    recording_thread = threading.get_ident()
    saved_load = wp.Module.load

    def record(module: wp.Module, device: object, block_dim: int | None = None, *args: object, **kw: object):
        if threading.get_ident() != recording_thread:
            return saved_load(module, device, block_dim, *args, **kw)
        loads[module, block_dim] = None
        return None

    def once(condition: object, while_body: Callable[..., None], stream: object = None, **kwargs: object) -> None:
        if callable(while_body):
            while_body(**kwargs)

    def both(condition: object, on_true: object = None, on_false: object = None, stream: object = None, **kwargs):
        for branch in (on_true, on_false):
            if callable(branch):
                branch(**kwargs)

    patched = {"capture_while": once, "capture_if": both, "get_suggested_block_size": lambda *a, **k: (256, 1)}
    saved = {name: getattr(wp, name) for name in patched}
    wp.Module.load = record
    for name, fn in patched.items():
        setattr(wp, name, fn)
    try:
        yield
    finally:
        wp.Module.load = saved_load
        for name, fn in saved.items():
            setattr(wp, name, fn)


def record_loads(work: Callable[[], None], device: wp.Device) -> Loads:
    """The module variants `work` launches a kernel of, found by a dry run of it on `device`."""
    loads: Loads = {}
    with wp.ScopedDevice(device), _dry_run(loads):
        work()
    return loads


class ModuleLoader:
    """Loads Warp modules (compiling those not in Warp's kernel cache) on `max_workers` threads
    (default: every usable core) while the caller goes on. A module variant is loaded once however
    often it is asked for."""

    def __init__(self, device: wp.Device, max_workers: int | None = None):
        self.device = device
        workers = max_workers if max_workers is not None else default_workers()
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="warp-compile")
        self._loads: dict[tuple[wp.Module, int | None], Future] = {}

    def request(self, work: Callable[[], None]) -> list[Future]:
        """Starts loading every module `work` launches (see `record_loads`) and returns one future
        per module; `wait` on them before running `work`."""
        return [self._submit(key) for key in record_loads(work, self.device)]

    def _submit(self, key: tuple[wp.Module, int | None]) -> Future:
        future = self._loads.get(key)
        if future is None:
            module, block_dim = key
            future = self._pool.submit(wp.force_load, self.device, [module], block_dim, 0)  # one module per thread
            self._loads[key] = future
        return future

    def wait(self, futures: Iterable[Future] | None = None) -> None:
        """Blocks until the given loads (default: every load asked for) are done; raises a load's
        error."""
        for future in list(self._loads.values()) if futures is None else futures:
            future.result()

    def close(self) -> None:
        """Waits for every load, then ends the threads."""
        self.wait()
        self._pool.shutdown()
