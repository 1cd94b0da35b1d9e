"""Warp's start, with a kernel cache it can write: Warp's own choice (WARP_CACHE_PATH, else the
user's cache directory), or, where that is not a writable directory (a read-only home, a file in
its place), a temporary one, said in one line."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

import warp as wp

from phalanx.files import probe_writable

_started = False


def init_warp() -> None:
    """`wp.init()`, falling back to a temporary kernel cache that is removed at exit when Warp's
    own is not writable; once it has run, a flag's test (kernel launches call it)."""
    global _started
    if _started:
        return
    try:
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
    _started = True


def _initialized() -> bool:
    from warp._src import context

    return context.runtime is not None
