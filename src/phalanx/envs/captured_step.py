"""An env step function run eagerly, through torch.compile, and on CUDA replayed from a CUDA
graph: the whole step (actions, physics, terms, resets, observations) becomes one launch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from phalanx.core.compiling import compiled
from phalanx.core.errors import ConfigError


class CapturedStep:
    """Calls `fn(actions)`. With `compile`, torch.compile fuses the term arithmetic around the
    physics (which stays Warp's captured graph) into a few kernels. With `capture` (CUDA), the
    first call runs eagerly (compiling and loading every kernel) and then records `fn` reading
    a static input into a CUDA graph; later calls copy the actions in and replay it, and return
    the graph's static outputs, which the next call overwrites.

    `fn` must keep its state in tensors updated in place: during the capture nothing runs, only
    Python-side effects happen (so it must have none beyond its tensors)."""

    def __init__(
        self,
        fn: Callable[[torch.Tensor], Any],
        action_shape: tuple[int, int],
        device: torch.device,
        generator: torch.Generator,
        capture: bool,
        compile: bool,  # noqa: A002 (named like torch.compile)
    ):
        if capture and device.type != "cuda":
            raise ConfigError(f"capture: CUDA graph capture needs a CUDA device, got {device}")
        self.capture, self.device, self.generator = capture, device, generator
        # One launch configuration per fused kernel (inductor's default compiles several and times
        # them at the first call): the step's kernels are small, launched from a graph.
        self.fn = compiled(fn, dynamic=False, options={"triton.autotune_pointwise": False}) if compile else fn
        self._input = torch.zeros(action_shape, device=device)
        self._graph: torch.cuda.CUDAGraph | None = None
        self._outputs: Any = None

    @property
    def captured(self) -> bool:
        """Whether calls now replay the recorded graph."""
        return self._graph is not None

    def __call__(self, actions: torch.Tensor) -> Any:
        if not self.capture:
            return self.fn(actions)
        if self._graph is None:
            out = self.fn(actions)
            self._record()
            return out
        self._input.copy_(actions)
        self._graph.replay()
        return self._outputs

    def _record(self) -> None:
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.generator)
        with torch.cuda.graph(graph):
            self._outputs = self.fn(self._input)
        self._graph = graph
