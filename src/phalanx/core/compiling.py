"""torch.compile for phalanx, with torch._dynamo imported only by the processes that compile.

`compile_boundary` marks a method that torch.compile must run as it is instead of tracing it
(Warp launches, a draw through a `torch.Generator`): a graph break, as `torch.compiler.disable`
makes. Decorating with `torch.compiler.disable` itself imports torch._dynamo when the class is
defined, about a second of start-up for every process that imports an env, though cartpole, every
run on the CPU and `phalanx play` compile nothing. So the mark waits: `compiled`,
the one way phalanx calls torch.compile, applies it before compiling anything, and a class defined
once torch._dynamo is loaded gets it at once."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import Any

import torch

_PENDING: list[tuple[type, str]] = []
"""(class, method name) of the boundaries not yet marked for torch.compile."""
_HASHING: list[threading.Thread] = []
"""The thread computing Triton's hash (`_hash_triton`), once started."""


class compile_boundary:  # noqa: N801 (a decorator, named like one)
    """Method decorator: torch.compile calls the method as it is (a graph break) rather than
    tracing into it. The method is left undecorated until something compiles."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def __set_name__(self, owner: type, name: str) -> None:
        if "torch._dynamo" in sys.modules:  # something may compile already: mark it now
            setattr(owner, name, torch.compiler.disable(self.fn))
        else:
            setattr(owner, name, self.fn)
            _PENDING.append((owner, name))


SHORT_KERNEL_NAMES = {"triton.descriptive_names": False}
"""inductor names a fused Triton kernel after every op it fuses, which for the env steps' kernels
runs past the 150 characters at which Triton cuts its cache's file names; inductor, looking for
the kernel's binary under the whole name, launches it through Triton instead and leaves it out of
its FX graph cache entry, so warm starts compiled those kernels again. Without the ops in their
names (`triton_poi__3`), every kernel is in the entry."""


def compiled(fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """`torch.compile(fn, **kwargs)`, after marking every `compile_boundary` defined so far. For
    inductor (the default backend), `SHORT_KERNEL_NAMES` joins the caller's options, unless the
    caller gives a `mode`, which torch.compile takes only without options. Waits for Triton's
    hash (`_hash_triton`) first: it imports Triton's packages, which compiling imports too, and
    two threads importing one package can each find the other's modules half done."""
    for thread in _HASHING:
        thread.join()
    while _PENDING:
        owner, name = _PENDING.pop()
        setattr(owner, name, torch.compiler.disable(owner.__dict__[name]))
    options = kwargs.pop("options", None) or {}
    if kwargs.get("backend", "inductor") == "inductor" and kwargs.get("mode") is None:
        options = SHORT_KERNEL_NAMES | options
    return torch.compile(fn, **kwargs, **({"options": options} if options else {}))


def import_compiler() -> None:
    """Imports torch.compile's machinery: Dynamo (with sympy) and inductor (with Triton). That
    takes seconds, and several times longer on a cold start beside the Warp threads generating
    the physics' modules' code, which hold the GIL in turn. An env that compiles
    imports it before its physics' modules start compiling, and hashes Triton on a thread
    (`_hash_triton`)."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401

    if not _HASHING:
        _HASHING.append(threading.Thread(target=_hash_triton, name="triton-key", daemon=True))
        _HASHING[0].start()


def _hash_triton() -> None:
    """Computes Triton's `triton_key`, which inductor's cache keys include: a hash of Triton's
    sources and its library of hundreds of MB, cached for the process. Computed by the first
    compile, it held the main thread for a noticeable part of a start; on this thread, not at all
    (hashing releases the GIL). The env's simulator is built in
    the meantime, so `compiled`'s wait for it is usually over at once."""
    with contextlib.suppress(Exception):  # no Triton (CPU builds of torch): nothing to hash
        from triton.runtime.cache import triton_key

        triton_key()
