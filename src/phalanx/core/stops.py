"""Stops by SIGINT or SIGTERM outside training's own handling (start-up, play, view, bench): the
signal raises, as Ctrl-C does, and is also recorded. Python drops what a weakref callback or a
`__del__` raises ("Exception ignored in ..."): a signal landing there would be lost and the run
would carry on. `raise_swallowed_stop`, called where start-up moves on, raises it again.
`stop_with_parent`: a job that gets SIGTERM when the process that launched it dies."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

PARENT_ENV = "PHALANX_STOP_WITH_PARENT"
"""Set to its own pid by a process that launches a job in a session of its own (`phalanx bench`):
the job stops (SIGTERM) when that process dies, though no signal of its session reaches the job."""

_PR_SET_PDEATHSIG = 1


def stop_with_parent() -> None:
    """Where `PARENT_ENV` names this process's parent: SIGTERM now if that parent has died, and
    when it dies (Linux's PR_SET_PDEATHSIG; elsewhere nothing). A bench killed outright (SIGKILL,
    the OOM killer) then leaves no job training on, as one whose iterations are unbounded would.
    The variable is taken out of the environment: the job's own children stay as they are."""
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0 and os.getppid() != int(parent):
        os.kill(os.getpid(), signal.SIGTERM)  # the parent died before the call


class Stopped(BaseException):  # noqa: N818 (a stop, not an error)
    """SIGTERM arrived where no handler of training's own was installed. A BaseException, as
    KeyboardInterrupt is: libraries catch `Exception` (Warp's kernel parser swallows it, or
    rebuilds it from its message) and a stop must pass through them."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_received: list[int] = []
"""The signals `_raise_stop` raised since `stops_raised` began (a raise that arrived is the last)."""


def _stop(signum: int) -> BaseException:
    """What a stop by `signum` raises: Ctrl-C's KeyboardInterrupt for SIGINT, else `Stopped`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signum)


def _raise_stop(signum: int, frame: object) -> None:
    _received.append(signum)
    raise _stop(signum)


def _quiet_stops(previous):
    """An unraisable hook that leaves out the stops `_raise_stop` raised where Python drops what is
    raised (each is recorded and raised again: its "Exception ignored ..." traceback would break the
    one line a stop prints) and hands anything else to `previous`."""

    def hook(unraisable) -> None:
        if not (_received and isinstance(unraisable.exc_value, (Stopped, KeyboardInterrupt))):
            previous(unraisable)

    return hook


def forget_stop_in_exec() -> None:
    """Clears CPython's record of a KeyboardInterrupt that left code `exec` ran from a string
    (dataclasses and namedtuple build their methods so): under `python -m`, how torchrun starts
    ranks, that record makes the interpreter end itself by SIGINT after it exits, whatever status
    it exits with, though the stop was caught. Each `exec` of a string clears it as it starts."""
    exec("")


def raise_swallowed_stop() -> None:
    """Raises a stop whose first raise something swallowed. Any stop recorded is one: one that
    arrived ends the command before it reaches here."""
    if _received:
        raise _stop(_received[-1])


def swallowed_stop() -> int:
    """The signal of a stop whose raise was swallowed (0 for none), taken: training's own handler,
    just installed, acts on it as on one that arrives now."""
    signum = _received[-1] if _received else 0
    _received.clear()
    return signum


@contextmanager
def stops_raised() -> Iterator[None]:
    """SIGTERM, and SIGINT where Python's Ctrl-C handler is in place (a background job keeps it
    ignored), raise and are recorded inside; the handlers before are put back after."""
    _received.clear()
    previous, hook = {}, sys.unraisablehook
    sys.unraisablehook = _quiet_stops(hook)
    try:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _raise_stop)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_stop)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = hook
        _received.clear()
