"""Warp's handle on a torch CUDA stream: one per stream for the whole process.

`wp.stream_from_torch` wraps the stream in a new `wp.Stream` at every call, and registers it with
Warp; a wrapper that is garbage collected unregisters the stream, without counting the other
wrappers of it. A Warp graph capture on that stream through a wrapper kept elsewhere then fails
with "Warp error: unknown stream" (it did for the simulator's step, after the QP kernel launched
through a wrapper of its own). Every Warp launch on a torch stream goes through `warp_stream`;
`launch` launches a kernel on tensors there."""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from phalanx.core.warp_cache import init_warp

_STREAMS: dict[tuple[int | None, int], wp.Stream] = {}
"""The wrappers, by device index and CUDA stream handle (every device's default stream is handle
0); kept for the process's life, so never unregistered."""


def warp_stream(stream: torch.cuda.Stream) -> wp.Stream:
    """The one `wp.Stream` of torch's CUDA `stream` (created at the first call)."""
    key = (stream.device.index, stream.cuda_stream)
    wrapper = _STREAMS.get(key)
    if wrapper is None:
        wrapper = _STREAMS[key] = wp.stream_from_torch(stream)
    return wrapper


def launch(kernel: wp.Kernel, dim: int, inputs: list, outputs: list, device: torch.device, **kwargs: Any) -> None:
    """Launches `kernel` over `dim` threads on torch's current stream of `device` (on a CPU, none):
    eagerly, or recorded into a torch CUDA graph being captured. Tensors among `inputs` and
    `outputs` go as Warp's views of them, strided as they are and without their gradients (Warp
    would allocate one for a tensor that requires it); other values as they are. `kwargs` go to
    `wp.launch` (e.g. `block_dim`)."""
    init_warp()
    wp_device = wp.device_from_torch(device)
    stream = warp_stream(torch.cuda.current_stream(device)) if wp_device.is_cuda else None
    wp.launch(
        kernel,
        dim=dim,
        inputs=[_warp_view(value) for value in inputs],
        outputs=[_warp_view(value) for value in outputs],
        device=wp_device,
        stream=stream,
        **kwargs,
    )


def _warp_view(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    return wp.from_torch(value, requires_grad=False, return_ctype=True)
