"""Warp's start, with a kernel cache it can write: Warp's own choice (WARP_CACHE_PATH, else the
user's cache directory), or, where that is not a writable directory (a read-only home, a file in
its place), a temporary one, said in one line. A module whose cached build Warp cannot load (a
truncated binary, a torn metadata file: a disk that filled, a copy cut short) is compiled again,
said in one line, instead of failing every run that uses the cache. On a machine without a CUDA
driver, Warp's native warning that it found none is left out: the run says its device itself.
Warp's banner and per-module compile lines show only where asked for (`configure_warp`)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import warp as wp

from phalanx.core.files import probe_writable

_started = False
_log_level_chosen = False
_broken_cache_said = False  # a broken cached build was reported (once per process)
_broken_cache_lock = threading.Lock()
NO_DRIVER = "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver."


def configure_warp(verbose: bool) -> None:
    """Warp's start-up banner and per-module compile lines only when `verbose`."""
    global _log_level_chosen
    wp.config.log_level = wp.LOG_INFO if verbose else wp.LOG_WARNING
    _log_level_chosen = True


def init_warp() -> None:
    """`wp.init()`, falling back to a temporary kernel cache that is removed at exit when Warp's
    own is not writable; once it has run, a flag's test (kernel launches call it)."""
    global _started
    if _started:
        return
    if not _log_level_chosen:
        configure_warp(verbose=False)
    try:
        with dropped_stderr_lines(NO_DRIVER):
            wp.init()
        probe_writable(Path(wp.config.kernel_cache_dir))
    except OSError as error:
        where = wp.config.kernel_cache_dir or "(unset)"
        fallback = tempfile.mkdtemp(prefix="phalanx-warp-cache-")
        atexit.register(shutil.rmtree, fallback, ignore_errors=True)
        print(
            f"phalanx: warning: Warp's kernel cache {where} is not a writable directory ({error.strerror or error}); "
            f"compiling into {fallback} for this process (set WARP_CACHE_PATH to a writable directory to keep "
            "compiled kernels)",
            file=sys.stderr,
        )
        wp.config.kernel_cache_dir = fallback
        if _initialized():  # Warp started, then its cache was found read-only: point it elsewhere
            from warp._src.build import init_kernel_cache

            init_kernel_cache(fallback)
        else:
            wp.init()
    wp.Module.load = _recompiling(wp.Module.load)
    _started = True


@contextlib.contextmanager
def dropped_stderr_lines(prefix: str) -> Iterator[None]:
    """Inside, what anything writes to file descriptor 2 (native code included) is held back; on
    leaving, it is written to stderr without the lines that start with `prefix`."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().splitlines(keepends=True) if not line.startswith(prefix.encode())]
            if kept:
                os.write(2, b"".join(kept))


def _recompiling(load: Callable[..., object]) -> Callable[..., object]:
    """`wp.Module.load` that, when loading a module's cached build fails, removes that build and
    loads again, which compiles it. Warp has no hook for this; its own load is tried first, so a
    kernel launch (which calls load every time) pays nothing more. A build that failed to compile
    and a load from a given binary file fail as before."""

    def load_or_recompile(module: wp.Module, device: object, block_dim: int | None = None, *args, **kwargs):
        try:
            return load(module, device, block_dim, *args, **kwargs)
        except Exception as error:
            if args or kwargs or module.failed_builds:
                raise
            variant = block_dim if block_dim is not None else module.options["block_dim"]
            cached = Path(wp.config.kernel_cache_dir) / module.get_module_identifier(variant)
            if not cached.is_dir():
                raise
            global _broken_cache_said
            with _broken_cache_lock:  # compile threads load at once: one line, however many are broken
                first, _broken_cache_said = not _broken_cache_said, True
            if first:
                print(
                    f"phalanx: warning: Warp's kernel cache {cached.parent} holds builds it cannot load "
                    f"(first: {module.name}: {error}); compiling them again",
                    file=sys.stderr,
                )
            shutil.rmtree(cached, ignore_errors=True)
            return load(module, device, block_dim)

    return load_or_recompile


def _initialized() -> bool:
    from warp._src import context

    return context.runtime is not None
