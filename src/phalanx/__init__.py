"""phalanx: robot reinforcement learning with simulation, observations, rewards and learning on one device.

Everything here loads on first use, so `import phalanx` stays light and the command line can
configure Warp before Warp starts.
"""

from __future__ import annotations

from phalanx.core.lazy import lazy_attributes

__version__ = "0.1.0"

_LAZY = {
    "register": "phalanx.training.registry",
    "LearningResult": "phalanx.training.registry",
    "make": "phalanx.training.registry",
    "registered_tasks": "phalanx.training.registry",
    "env_cfg": "phalanx.training.registry",
    "train_cfg": "phalanx.training.registry",
    "algo_cfg": "phalanx.training.registry",
    "TaskCfg": "phalanx.envs.cfg",
    "VecEnv": "phalanx.core.vec_env",
    "TrainCfg": "phalanx.training.cfg",
    "train": "phalanx.training.run",
    "mdp": "phalanx.envs",
}
__all__ = ["__version__", *_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
