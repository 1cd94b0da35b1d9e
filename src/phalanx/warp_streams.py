"""Warp's handle on a torch CUDA stream: one per stream for the whole process.

`wp.stream_from_torch` wraps the stream in a new `wp.Stream` at every call, and registers it with
Warp; a wrapper that is garbage collected unregisters the stream, without counting the other
wrappers of it. A Warp graph capture on that stream through a wrapper kept elsewhere then fails
with "Warp error: unknown stream" (it did for the simulator's step, after the QP kernel launched
through a wrapper of its own). Every Warp launch on a torch stream goes through `warp_stream`."""

from __future__ import annotations

import torch
import warp as wp

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
