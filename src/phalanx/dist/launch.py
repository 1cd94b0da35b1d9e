"""The torchrun that `phalanx train --gpus N` becomes: `torch.distributed.run`, except that a
signal which stops the job (a scheduler's SIGTERM, Ctrl-C) ends it with one line and the shell's
status for that signal (128 + its number) instead of torchrun's traceback. torchrun's agent has
forwarded the signal to every rank and waited for them (each phalanx rank finishes its iteration
and saves) before it raises.

    python -m phalanx.dist.launch TORCHRUN_ARGS...
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main as torchrun

    try:
        torchrun(argv)
    except SignalException as stop:
        print(f"torchrun: stopped by {stop.sigval.name}; its ranks were signalled and have exited", file=sys.stderr)
        return 128 + int(stop.sigval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
