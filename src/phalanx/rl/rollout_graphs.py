"""The agent's work around each env step (acting, recording, returns) replayed as CUDA graphs,
one per stage of the rollout, between replays of the env's own graph."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import torch


class StagedGraphs:
    """`run(key, fn, *args)` calls fn(*args) eagerly until `warm()`; after that, with `enabled`,
    the first call of each key records fn into a CUDA graph (its tensor inputs must be static
    buffers) and every call replays it, returning the recorded outputs.

    The graphs share one memory pool. That is safe because every rollout replays them in the
    order they were recorded, one after another, and what one graph leaves behind (its outputs,
    the state it writes in place) is used before the graphs recorded ahead of it run again; so a
    rollout holds one stage's temporaries (e.g. a convolutional policy's activations) instead of
    one set per stage."""

    def __init__(self, enabled: bool, generator: torch.Generator):
        self.enabled, self.generator = enabled, generator
        self._warm = False
        self._graphs: dict[Hashable, tuple[torch.cuda.CUDAGraph, Any]] = {}
        self._pool: Any = None

    def warm(self) -> None:
        """Kernels are compiled and state is allocated: the next calls may record."""
        self._warm = True

    def run(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
        if not (self.enabled and self._warm):
            return fn(*args)
        if key not in self._graphs:
            graph = torch.cuda.CUDAGraph()
            graph.register_generator_state(self.generator)
            self._pool = self._pool or torch.cuda.graph_pool_handle()
            with torch.cuda.graph(graph, pool=self._pool):
                out = fn(*args)
            self._graphs[key] = (graph, out)
        graph, out = self._graphs[key]
        graph.replay()
        return out

    def clear(self) -> None:
        self._graphs.clear()
        self._pool = None
