"""Large env buffers of a checkpoint, stored deflated. A pixel task's envs hold their last image
observations, most of its checkpoint; zlib's fastest level shrinks them several times over (they
are uint8 colours, class ids and depths, much of them background). A deflated tensor is data like
any other: uint8 bytes, its dtype's name (from a fixed list) and its shape; it is read back to
exactly the bytes these declare, or refused."""

from __future__ import annotations

import math
import zlib
from typing import Any

import torch

DEFLATE_BYTES = 16 * 2**20
"""Env buffers of at least this many bytes are stored deflated (where that halves them at least)."""
KEY = "deflated"
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.uint8, torch.int8)
    + (torch.int16, torch.int32, torch.int64, torch.bool)
}


class DeflatedError(ValueError):
    """A deflated tensor that does not read back to what it declares."""


def deflate_envs(state: dict[str, Any]) -> dict[str, Any]:
    """`state` (a trainer's checkpoint) with the large tensors of each rank's env state deflated."""
    if "ranks" not in state:
        return state
    return state | {"ranks": [rank | {"env": _deflate(rank["env"])} for rank in state["ranks"]]}


def inflate_envs(state: dict[str, Any]) -> dict[str, Any]:
    """`deflate_envs` undone. Raises DeflatedError naming the buffer that does not read back."""
    if not isinstance(state.get("ranks"), list):
        return state
    return state | {
        "ranks": [
            rank | {"env": _inflate(rank["env"], f"ranks[{i}].env")}
            if isinstance(rank, dict) and "env" in rank
            else rank
            for i, rank in enumerate(state["ranks"])
        ]
    }


def _deflate(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _deflate(item) for key, item in value.items()}
    name = _name(value.dtype) if isinstance(value, torch.Tensor) else None
    if name is None or value.nbytes < DEFLATE_BYTES:
        return value
    raw = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
    packed = zlib.compress(raw, 1)
    if len(packed) > raw.nbytes // 2:
        return value
    return {
        KEY: torch.frombuffer(bytearray(packed), dtype=torch.uint8),
        "dtype": name,
        "shape": list(value.shape),
    }


def _inflate(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        if KEY in value:
            return _tensor(value, where)
        return {key: _inflate(item, f"{where}.{key}") for key, item in value.items()}
    return value


def _tensor(packed: dict[str, Any], where: str) -> torch.Tensor:
    data, name, shape = packed.get(KEY), packed.get("dtype"), packed.get("shape")
    if set(packed) != {KEY, "dtype", "shape"} or not isinstance(data, torch.Tensor) or data.dtype != torch.uint8:
        raise DeflatedError(f"{where} is not a deflated tensor phalanx writes (uint8 bytes, dtype, shape)")
    if name not in DTYPES:
        raise DeflatedError(f"{where} declares dtype {name!r}; one of {', '.join(DTYPES)} is allowed")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise DeflatedError(f"{where} declares shape {shape!r}, not a list of sizes >= 0")
    dtype = DTYPES[name]
    size = math.prod(shape) * dtype.itemsize
    stream = zlib.decompressobj()
    try:  # at most one byte past what is declared (a bound of 0 would mean none)
        raw = stream.decompress(data.contiguous().numpy().tobytes(), size + 1)
        ended = len(raw) == size and not stream.decompress(stream.unconsumed_tail, 1) and stream.eof
    except zlib.error as error:
        raise DeflatedError(f"{where} does not inflate ({error})") from None
    if not ended or stream.unused_data:
        raise DeflatedError(f"{where} does not inflate to the {size} bytes its dtype and shape {shape} declare")
    if size == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def _name(dtype: torch.dtype) -> str | None:
    name = str(dtype).removeprefix("torch.")
    return name if name in DTYPES else None
