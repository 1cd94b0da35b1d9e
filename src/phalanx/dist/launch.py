"""The torchrun that `phalanx train --gpus N` becomes: `torch.distributed.run`, except that a
signal which stops the job (a scheduler's SIGTERM, Ctrl-C) ends it with one line and the shell's
status for that signal (128 + its number) instead of torchrun's traceback. torchrun forwards the
signal to every rank (each finishes its iteration and saves) and waits `SHUTDOWN_GRACE_S`, or
TORCH_ELASTIC_SHUTDOWN_TIMEOUT where set; a rank it had to kill makes the line say that no
checkpoint was written, and the status 1. A rank that fails ends the job with torchrun's summary
of the failures (root cause first) and the status 1.

    python -m phalanx.dist.launch TORCHRUN_ARGS...
"""

from __future__ import annotations

import logging
import os
import signal
import sys

SHUTDOWN_GRACE_S = 600
"""Seconds torchrun waits for its ranks to finish their iteration and save after a stop signal
(as the ranks' default `startup_timeout_s` allows a slow phase, a checkpoint's write among them)."""


class _KilledRanks(logging.Handler):
    """Counts the ranks torchrun's agent killed because they outlived its grace."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Unable to shutdown process"):
            self.count += 1


def main(argv: list[str]) -> int:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    grace = os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT")
    if grace is None:
        grace = str(SHUTDOWN_GRACE_S)
        argv = [f"--shutdown-timeout={grace}", *argv]
    killed = _KilledRanks()
    logging.getLogger("torch.distributed.elastic.multiprocessing.api").addHandler(killed)
    try:
        torchrun(argv)
    except SignalException as stop:
        if killed.count:
            print(
                f"torchrun: stopped by {stop.sigval.name}; {killed.count} rank(s) had not saved within {grace} s "
                "and were killed: no checkpoint was written for this stop (the run continues from its last one "
                "with --resume last; TORCH_ELASTIC_SHUTDOWN_TIMEOUT sets the grace)",
                file=sys.stderr,
            )
            return 1
        print(f"torchrun: stopped by {stop.sigval.name}; its ranks saved and have exited", file=sys.stderr)
        return 128 + int(stop.sigval)
    except ChildFailedError as failed:
        # A stop signal sent to a rank itself (not through torchrun): every rank stopped after the
        # same iteration and saved, exiting with the signal's status, which torchrun calls a failure.
        codes = {failure.exitcode for failure in failed.failures.values()}
        stops = {128 + int(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        if len(codes) != 1 or not codes <= stops:
            # A rank failed or was killed: torchrun's summary names it (the root cause), without
            # the launcher's own traceback; the ranks have said what was saved.
            print(failed.format_msg(), file=sys.stderr)
            return 1
        code = codes.pop()
        name = signal.Signals(code - 128).name
        print(f"torchrun: a rank was stopped by {name}; its ranks saved and have exited", file=sys.stderr)
        return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
