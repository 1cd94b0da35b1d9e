"""torch.distributed for phalanx: rank and device from torchrun's environment, parameter
broadcast, flattened gradient all-reduce, and sums over ranks. With one process (no torchrun)
every call is the identity, so single-device training runs the same code."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from collections.abc import Callable
from typing import Any, NoReturn

import torch
import torch.distributed as dist

from phalanx.core.errors import ConfigError


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in the job."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    store: dist.Store | None = field(default=None, compare=False, repr=False)
    """A connection to the job's key-value store (torchrun's), for the stall watchdog."""

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, writes checkpoints and videos."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Copies rank 0's parameters and buffers into every rank's module, in place."""
        if self.active:
            for tensor in (*module.parameters(), *module.buffers()):
                dist.broadcast(tensor.data, src=0)

    def average_gradients(self, params: list[torch.nn.Parameter], extra: torch.Tensor) -> torch.Tensor:
        """Replaces each gradient by its mean over ranks and returns the mean of `extra` (a few
        values riding along): one all-reduce of the flattened gradients and `extra`."""
        if not self.active:
            return extra
        grads = [p.grad for p in params if p.grad is not None]  # the same parameters on every rank
        flat = torch.cat([*(g.reshape(-1) for g in grads), extra.reshape(-1)])
        dist.all_reduce(flat)
        flat /= self.world_size
        means = flat.split([g.numel() for g in grads] + [extra.numel()])
        # One multi-tensor copy back (a kernel per gradient before: 13 for a 2-layer actor-critic,
        # run at every minibatch).
        if grads:
            torch._foreach_copy_(grads, [m.view_as(g) for m, g in zip(means, grads, strict=False)])
        return means[-1].view_as(extra)

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sums `tensor` over ranks in place and returns it."""
        if self.active:
            dist.all_reduce(tensor)
        return tensor

    def mean_(self, tensor: torch.Tensor) -> torch.Tensor:
        """Averages `tensor` over ranks in place and returns it."""
        if self.active:
            dist.all_reduce(tensor)
            tensor /= self.world_size
        return tensor

    def spread(self, value: int, device: torch.device) -> tuple[int, int]:
        """The least and the greatest `value` over ranks (both `value` with one process)."""
        if not self.active:
            return value, value
        both = torch.tensor([-value, value], dtype=torch.long, device=device)
        dist.all_reduce(both, op=dist.ReduceOp.MAX)
        return -int(both[0]), int(both[1])

    def barrier(self, device: torch.device) -> None:
        """Returns on every rank once all ranks have called it (the host waits, on NCCL too)."""
        self.spread(0, device)

    def check_alike(self, started: dict[str, Any], name: Callable[[str], str]) -> None:
        """Refuses a job whose ranks were not started alike: each rank puts `started` (plain data:
        the versions it runs, the settings it was given) in the job's store as JSON, reads every
        rank's, and raises the same ConfigError on every rank, naming the first rank and value
        that differ from rank 0's (a node started from another install or with other flags);
        `name` turns the value's dotted path into words."""
        if not self.active or self.store is None:
            return
        self.store.set(f"started/{self.rank}", json.dumps({"host": socket.gethostname(), "started": started}))
        first = json.loads(self.store.get("started/0"))
        for rank in range(1, self.world_size):
            other = json.loads(self.store.get(f"started/{rank}"))
            where = _first_difference(first["started"], other["started"])
            if where is not None:
                path, theirs, ours = where
                raise ConfigError(
                    f"--distributed: rank {rank} (on {other['host']}) was started with {name(path)} {theirs!r}, "
                    f"rank 0 (on {first['host']}) with {ours!r}: every rank must run the same versions and settings"
                )

    def gather_to_main(self, tree: Any, device: torch.device) -> list[Any] | None:
        """Every rank's `tree` (nested dicts, lists and tuples of tensors and plain values, alike
        in structure and shapes on every rank) on rank 0, in rank order, with tensors on the CPU;
        None on the other ranks. One gather of each rank's tensors packed into bytes on `device`
        (plain values are rank 0's)."""
        if not self.active:
            return [_unpack(tree, _pack(tree, torch.device("cpu")))]
        packed = _pack(tree, device)
        low, high = self.spread(packed.numel(), device)
        if low != high:
            raise RuntimeError(f"gather_to_main: ranks hold {low} to {high} bytes of state; they must be alike")
        chunks = [torch.empty_like(packed) for _ in range(self.world_size)] if self.is_main else None
        dist.gather(packed, chunks, dst=0)
        return None if chunks is None else [_unpack(tree, chunk.cpu()) for chunk in chunks]


def _first_difference(ours: Any, theirs: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first dotted path at which two JSON values differ, with theirs and ours; None if alike."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            found = _first_difference(ours.get(key), theirs.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    return None if ours == theirs else (path, theirs, ours)


def _tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors of a nested state, in a fixed order."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    children = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, list | tuple) else ()
    return [t for child in children for t in _tensors(child)]


def _pack(tree: Any, device: torch.device) -> torch.Tensor:
    """The bytes of the tree's tensors, concatenated: a uint8 tensor on `device`."""
    parts = [t.detach().reshape(-1).view(torch.uint8).to(device) for t in _tensors(tree)]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.uint8, device=device)


def _unpack(tree: Any, packed: torch.Tensor, offset: list[int] | None = None) -> Any:
    """A copy of `tree` whose tensors are read, in `_tensors` order, from the bytes `packed`."""
    offset = [0] if offset is None else offset
    if isinstance(tree, torch.Tensor):
        size = tree.numel() * tree.element_size()
        chunk = packed[offset[0] : offset[0] + size].clone()  # its own storage: aligned for any dtype
        offset[0] += size
        return chunk.view(tree.dtype).reshape(tree.shape)
    if isinstance(tree, dict):
        return {key: _unpack(value, packed, offset) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_unpack(value, packed, offset) for value in tree)
    return tree


def init_distributed(device: str | None, timeout_s: float = 120.0) -> tuple[DistContext, str | None]:
    """Joins the torchrun job (NCCL on CUDA, gloo on CPU) and returns the context and the device
    this rank uses (cuda:LOCAL_RANK on GPUs). A collective that waits longer than `timeout_s`
    fails instead of hanging (the stall watchdog usually stops a stuck job sooner)."""
    rank, local_rank, world = _torchrun_ranks()
    use_cuda = device != "cpu" and torch.cuda.is_available()
    if use_cuda:
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(local_rank)
    else:
        device = "cpu"
    timeout = timedelta(seconds=timeout_s)
    host, port = _master()
    backend = "nccl" if use_cuda else "gloo"
    try:
        store = dist.PrefixStore(_key_prefix(), _job_store(host, port, rank, world, timeout))
        pg_store = dist.PrefixStore("pg", store)
        dist.init_process_group(backend, store=pg_store, rank=rank, world_size=world, timeout=timeout)
        monitor = _watchdog_store(host, port, world, timeout)
    except (dist.DistNetworkError, dist.DistStoreError) as error:  # nobody at the address, or ranks missing
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        raise ConfigError(
            f"--distributed: rank {rank} could not join the job at {host}:{port} within {timeout_s:.0f} s "
            f"({reason}): is rank 0 running there, and do all {world} ranks start?"
        ) from None
    return DistContext(rank=rank, local_rank=local_rank, world_size=world, store=monitor), device


def library_rank(trainer: str, timeout_s: float = 120.0) -> tuple[DistContext, str]:
    """This process's place in a torchrun job whose process group the RL library `trainer` starts
    itself (rsl_rl, rl_games and skrl each join it over NCCL from torchrun's environment), and
    its device, cuda:LOCAL_RANK. The context's collectives work once the library has joined."""
    rank, local_rank, world = _torchrun_ranks()
    if torch.cuda.device_count() <= local_rank:
        raise ConfigError(
            f"--trainer {trainer} runs one process per CUDA GPU (its process group is NCCL); "
            f"local rank {local_rank} has no GPU (this machine has {torch.cuda.device_count()})",
            "gpus",
        )
    torch.cuda.set_device(local_rank)
    return library_context(rank, local_rank, world, timeout_s), f"cuda:{local_rank}"


def library_context(rank: int, local_rank: int, world: int, timeout_s: float) -> DistContext:
    """The context of a rank whose RL library starts the process group, with a connection to
    the job's store for the stall watchdog where torchrun's agent hosts that store (elsewhere
    the library's own rendezvous makes it later: then no watchdog)."""
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    monitor = _watchdog_store(*_master(), world, timedelta(seconds=timeout_s)) if agent_store else None
    return DistContext(rank=rank, local_rank=local_rank, world_size=world, store=monitor)


def _key_prefix() -> str:
    """The job's keys under this attempt's prefix: an earlier attempt's keys stay apart."""
    return f"phalanx/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"


def _watchdog_store(host: str, port: int, world: int, timeout: timedelta) -> dist.Store:
    """A connection of the stall watchdog's own to the job's store (a blocking get on the process
    group's would delay it)."""
    return dist.PrefixStore(_key_prefix(), dist.TCPStore(host, port, world, is_master=False, timeout=timeout))


def _master() -> tuple[str, int]:
    """MASTER_ADDR and MASTER_PORT, checked: a host that does not resolve or a port that is not
    one is a line now, not a connection that times out with a traceback."""
    host, port = os.environ.get("MASTER_ADDR", ""), os.environ.get("MASTER_PORT", "")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--distributed: MASTER_PORT is {port!r}, not a port number (1-65535)")
    try:
        socket.getaddrinfo(host, int(port))
    except (socket.gaierror, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ConfigError(
            f"--distributed: MASTER_ADDR {host!r} does not resolve ({reason}): give rank 0's host name or address"
        ) from None
    return host, int(port)


def _torchrun_ranks() -> tuple[int, int, int]:
    """RANK, LOCAL_RANK and WORLD_SIZE, as torchrun sets them."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise ConfigError("--distributed: run under torchrun (python -m torch.distributed.run ...), or use --gpus N")
    return int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", 0)), int(os.environ["WORLD_SIZE"])


def _job_store(host: str, port: int, rank: int, world: int, timeout: timedelta) -> dist.Store:
    """A client of the store at MASTER_ADDR:MASTER_PORT, as torch's env:// rendezvous makes it:
    torchrun's agent hosts it (TORCHELASTIC_USE_AGENT_STORE), otherwise rank 0 does."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return dist.TCPStore(host, port, world, is_master=False, timeout=timeout)
    if rank != 0:
        _wait_for(host, port, timeout)
    return dist.TCPStore(host, port, world, is_master=rank == 0, timeout=timeout, multi_tenant=True)


def _wait_for(host: str, port: int, timeout: timedelta) -> None:
    """Returns once something listens at host:port; raises DistNetworkError after `timeout` (a
    TCPStore client's own attempts print C++ stack traces to stderr while they retry)."""
    deadline = time.monotonic() + timeout.total_seconds()
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise dist.DistNetworkError(f"nothing answered at {host}:{port} ({error.strerror or error})") from None
            time.sleep(0.2)


def end_rank(status: int) -> NoReturn:
    """Ends a torchrun worker whose work is done (process group destroyed, files closed and
    synced) with `status`, flushing its output and skipping the interpreter's teardown. In
    about one job in sixty on a 2-core CPU machine, a gloo rank that had finished its run
    aborted on the way out ("terminate called without an active exception", SIGABRT) and
    torchrun failed the whole job: nothing of a finished run is left to tear down."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
