"""What the page draws of an env beside its geoms (its command terms' markers), and tensors as
the host arrays MuJoCo C and viser take."""

from __future__ import annotations

import numpy as np
import torch

from phalanx.envs.markers import Marker


def device_markers(env, k: int) -> dict[str, Marker]:
    """The markers of every command term (`CommandTerm.markers`) for the first `k` envs, on the
    env's device: "COMMAND/NAME" -> Marker."""
    out = {}
    for name, term in zip(env.commands.names, env.commands.terms, strict=True):
        for part, m in term.markers(env).items():
            out[f"{name}/{part}"] = Marker(m.shape, m.pos[:k], m.quat[:k], m.scale[:k], m.color)
    return out


def command_markers(env, k: int) -> dict[str, tuple]:
    """`device_markers` on the host: "COMMAND/NAME" -> (shape, positions, orientations, scales, color)."""
    return {
        name: (m.shape, host_array(m.pos), host_array(m.quat), host_array(m.scale), m.color)
        for name, m in device_markers(env, k).items()
    }


def host_array(tensor: torch.Tensor) -> np.ndarray:
    """`tensor` on the host, as float64 numpy (what MuJoCo C and viser take)."""
    return tensor.detach().to("cpu", torch.float64).numpy()
