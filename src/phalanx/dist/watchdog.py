"""Stops a distributed job whose ranks stall, naming the ranks that are behind.

Every rank publishes its `Progress` to the job's key-value store once a second from a background
thread. A rank whose own count has not moved for `timeout_s` (`startup_timeout_s` in slow phases)
names the ranks behind and asks them through the store to stop first: each writes torchrun's error
file and exits, so torchrun reports the stuck rank as the root cause, not the healthy one that
noticed. This works where the backends' own timeouts cannot: a rank stuck outside any collective,
or ranks blocked inside collectives that a CUDA graph replays.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import NoReturn

from phalanx.core.stops import raise_swallowed_stop
from phalanx.dist.context import DistContext

VERDICT_KEY = "stall/verdict"


@dataclass
class Progress:
    """What this process has begun so far, for the stall watchdog."""

    count: int = 0
    """Start-up stages, env steps, updates and saves begun (every rank counts the same ones)."""
    phase: str = "joining the job"
    """What it is doing, for the report ("building the env", "iteration 12", ...)."""
    slow: bool = True
    """Whether the phase may take minutes without counting (start-up, compiling, the first
    iteration, writing a checkpoint): then the start-up allowance applies."""

    def tick(self) -> None:
        self.count += 1

    def enter(self, phase: str, slow: bool = False) -> None:
        """Begins a phase; a stop signal swallowed in the one before (see phalanx.core.stops) raises here."""
        raise_swallowed_stop()
        self.count += 1
        self.phase, self.slow = phase, slow


class StallWatchdog:
    """Context manager around a distributed run; does nothing with one process."""

    def __init__(
        self,
        ctx: DistContext,
        progress: Progress,
        timeout_s: float,
        startup_timeout_s: float | None = None,
        poll_s: float = 1.0,
        grace_s: float = 3.0,
    ):
        self.ctx, self.progress, self.poll_s, self.grace_s = ctx, progress, poll_s, grace_s
        self.timeout_s = timeout_s
        self.startup_timeout_s = timeout_s if startup_timeout_s is None else startup_timeout_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="phalanx-stall-watchdog", daemon=True)
        self.stopping = threading.Event()
        """Set once this rank has decided to stop the job (its thread ends the process soon)."""

    def __enter__(self) -> StallWatchdog:
        if self.ctx.active and self.ctx.store is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive() and not self.stopping.is_set():
            self._thread.join()

    def _key(self, rank: int) -> str:
        return f"progress/{rank}"

    def _run(self) -> None:
        try:
            self._watch()
        except Exception as error:  # noqa: BLE001 (a lost store must not take the training down)
            print(f"phalanx train: rank {self.ctx.rank}: stall watchdog stopped: {error}", file=sys.stderr, flush=True)

    def _watch(self) -> None:
        store, rank = self.ctx.store, self.ctx.rank
        last, changed_at = self.progress.count, time.monotonic()
        while not self._stop.wait(self.poll_s):
            value = self.progress.count
            store.set(self._key(rank), f"{value} {self.progress.phase}")
            if store.check([VERDICT_KEY]):
                named, reporter = store.get(VERDICT_KEY).decode().split(" ")
                if str(rank) in named.split(","):
                    line = (
                        f"phalanx train: rank {rank}: stopped by rank {reporter}'s stall watchdog: this rank made "
                        f"no progress in '{self.progress.phase}'"
                    )
                    print(line, file=sys.stderr, flush=True)
                    _exit(line)
            now = time.monotonic()
            if value != last:
                last, changed_at = value, now
                continue
            allowance = self.startup_timeout_s if self.progress.slow else self.timeout_s
            if now - changed_at > allowance:
                self._stop_job(now - changed_at)

    def _stop_job(self, stalled_s: float) -> NoReturn:
        """Reports, names the ranks behind so that they stop first, then ends this process."""
        line, behind = self.report(stalled_s)
        self.stopping.set()
        print(line, file=sys.stderr, flush=True)
        if behind and self.ctx.rank not in behind:
            self.ctx.store.set(VERDICT_KEY, f"{','.join(map(str, behind))} {self.ctx.rank}")
            time.sleep(self.grace_s)  # torchrun's failure times are whole seconds: theirs come first
        _exit(line)

    def report(self, stalled_s: float) -> tuple[str, list[int]]:
        """One line (how long this rank has stalled, in which phase, and which ranks are behind
        and where) and the ranks behind."""
        progress: dict[int, tuple[int, str]] = {}
        for rank in range(self.ctx.world_size):
            key = self._key(rank)
            if self.ctx.store.check([key]):
                count, phase = self.ctx.store.get(key).decode().split(" ", 1)
                progress[rank] = (int(count), phase)
        head = f"phalanx train: rank {self.ctx.rank}: no progress for {stalled_s:.0f} s in '{self.progress.phase}'"
        silent = [r for r in range(self.ctx.world_size) if r not in progress]
        if silent:
            return f"{head}; rank(s) {_ranks(silent)} never reported progress: stopping the job", silent
        top = max(count for count, _ in progress.values())  # every rank reported: none is silent
        behind = [r for r, (count, _) in progress.items() if count < top]
        if behind:
            where = "; ".join(f"rank {r} in '{progress[r][1]}'" for r in behind)
            return f"{head}; rank(s) {_ranks(behind)} stopped behind the others ({where}): stopping the job", behind
        return f"{head}; every rank stopped at the same point (a hang inside a collective?): stopping the job", []

    def wait_for_exit(self) -> None:
        """Blocks while this rank's watchdog is stopping the job (it ends the process)."""
        if self.stopping.is_set():
            self._thread.join()


def _exit(message: str) -> NoReturn:
    """Ends this process with status 1 after leaving `message` where torchrun reads a worker's
    error (TORCHELASTIC_ERROR_FILE): its summary shows it, timed now."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if path:
        extra = {"py_callstack": message, "timestamp": str(int(time.time()))}
        with contextlib.suppress(OSError), open(path, "w") as file:
            json.dump({"message": {"message": message, "extraInfo": extra}}, file)
    os._exit(1)


def _ranks(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)
