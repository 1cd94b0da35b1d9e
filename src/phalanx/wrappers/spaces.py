"""Gymnasium spaces of a phalanx env (one env's observation group, its actions), and the check that
a library's adapter gets vector observations: shared by the adapters and `phalanx.gym`."""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    from gymnasium import spaces
except ImportError:
    raise ImportError("phalanx's Gymnasium spaces need gymnasium: pip install -e '.[gym]'") from None
import numpy as np
import torch

from phalanx.core.errors import ConfigError
from phalanx.core.vec_env import VecEnv

if TYPE_CHECKING:
    from phalanx.training.cfg import TrainCfg


def observation_box(value: torch.Tensor) -> spaces.Box:
    """The space of one env's rows of an observation group (num_envs, ...): uint8 images in
    [0, 255], float32 values unbounded."""
    shape = tuple(value.shape[1:])
    if value.dtype == torch.uint8:
        return spaces.Box(0, 255, shape, np.uint8)
    return spaces.Box(-np.inf, np.inf, shape, np.float32)


def action_box(env: VecEnv, unbounded: float = np.inf) -> spaces.Box:
    """One env's actions, within the env's action clip (it clamps actions itself); +-`unbounded`
    without one."""
    bound = unbounded if env.action_clip is None else env.action_clip
    return spaces.Box(-bound, bound, (env.action_dim,), np.float32)


def check_vector_observations(train: TrainCfg, library: str) -> None:
    """Refuses a policy that sees images (`policy.image_group`): the adapters build MLPs."""
    if train.policy.image_group is not None:
        image = train.policy.image_group
        raise ConfigError(f"{library} takes vector observations only, got policy.image_group={image!r}", "trainer")
