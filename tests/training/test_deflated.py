"""Large env buffers of a checkpoint are stored deflated and read back exactly; a deflated buffer
that does not read back to what it declares is refused in one line."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
import torch

from phalanx.training import deflated
from phalanx.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


def _state() -> dict:
    image = torch.zeros(8, 16, 16, 5)
    image[:, 4:9, 6:12, :3] = torch.arange(256, dtype=torch.uint8)[100:103].float() / 255.0  # a cube
    image[..., 3] = 0.62  # depth
    env = {
        "obs": {"image": image, "policy": torch.randn(8, 3)},
        "episode": {"done": torch.zeros(8, 4096, dtype=torch.bool), "noise": torch.randn(8, 1024)},
        "sim": {"qpos": torch.zeros(8, 512, dtype=torch.bfloat16), "step": torch.arange(8)},
        "rng": torch.zeros(5000, dtype=torch.uint8),
    }
    return {"format": 2, "task": "t", "ranks": [{"env": env, "generator": torch.ones(4, dtype=torch.uint8)}]}


def _leaves(tree, path=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{path}.{key}")
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _leaves(value, f"{path}[{i}]")
    else:
        yield path, tree


def test_large_env_buffers_are_deflated_and_read_back_exactly(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(deflated, "DEFLATE_BYTES", 1024)
    state, path, copy = _state(), tmp_path / "model_last.pt", tmp_path / "model_7.pt"
    save_checkpoint(path, state, copy)
    stored = torch.load(path, weights_only=True)["ranks"][0]["env"]
    assert torch.equal(
        stored["obs"]["image"]["deflated"],
        torch.load(copy, weights_only=True)["ranks"][0]["env"]["obs"]["image"]["deflated"],
    )
    assert set(stored["obs"]["image"]) == {"deflated", "dtype", "shape"}  # compressible and large
    assert set(stored["episode"]["done"]) == {"deflated", "dtype", "shape"}
    assert isinstance(stored["episode"]["noise"], torch.Tensor)  # large, but random: it stays as it is
    assert isinstance(stored["obs"]["policy"], torch.Tensor)  # small
    loaded = load_checkpoint(path, "t", ("ranks",))
    want, got = dict(_leaves(state)), dict(_leaves(loaded))
    assert want.keys() == got.keys()
    for name, value in want.items():
        if isinstance(value, torch.Tensor):
            assert got[name].dtype == value.dtype and torch.equal(got[name], value), name
    assert (
        load_checkpoint(path, "t", ("task",))["ranks"][0]["env"]["obs"]["image"].keys() == stored["obs"]["image"].keys()
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d | {"deflated": d["deflated"][:-9]}, "does not inflate"),
        (lambda d: d | {"shape": [8, 16, 16, 6]}, "does not inflate to the 49152 bytes"),
        (lambda d: d | {"shape": [8, 16, 16, 4]}, "does not inflate to the 32768 bytes"),
        (lambda d: d | {"shape": [8, -16, 16, 5]}, "declares shape [8, -16, 16, 5], not a list of sizes >= 0"),
        (lambda d: d | {"dtype": "complex64"}, "declares dtype 'complex64'; one of float32"),
        (lambda d: d | {"extra": 1}, "is not a deflated tensor phalanx writes"),
        (
            lambda d: (
                d | {"deflated": torch.frombuffer(bytearray(zlib.compress(b"\0" * 40960) + b"!"), dtype=torch.uint8)}
            ),
            "does not inflate to the 40960 bytes",
        ),
    ],
)
def test_a_damaged_deflated_buffer_is_one_line(tmp_path: Path, monkeypatch, damage, message: str) -> None:
    monkeypatch.setattr(deflated, "DEFLATE_BYTES", 1024)
    state = deflated.deflate_envs(_state())
    image = state["ranks"][0]["env"]["obs"]["image"]
    state["ranks"][0]["env"]["obs"]["image"] = damage(image)
    path = tmp_path / "model_last.pt"
    torch.save(state, path)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path, "t", ("ranks",))
    assert str(error.value).startswith(f"checkpoint: {path}: ranks[0].env.obs.image ")
    assert message in str(error.value) and "\n" not in str(error.value)
