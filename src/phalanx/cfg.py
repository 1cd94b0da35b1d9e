"""Everything a task file configures, from one module: the env (`TaskCfg`, its terms' configs and
the term base classes, actions, physics, actuators, cameras, terrain), the training defaults
(`TrainCfg`, PPO, the policy's networks; the off-policy learners' `TD3Cfg`, `SACCfg`) and the
result the task must learn (`LearningResult`). With `phalanx.register` and the term library
`phalanx.mdp`, a task needs nothing else:

    import phalanx
    from phalanx import mdp
    from phalanx.cfg import ObsTermCfg, RewardTermCfg, TaskCfg, TrainCfg, ...
"""

from __future__ import annotations

from phalanx.envs.cfg import (
    ActionCfg,
    ActionController,
    CommandTerm,
    CommandTermCfg,
    ControllerCfg,
    CurriculumTermCfg,
    EventTermCfg,
    GripperCfg,
    LowLevelPolicyCfg,
    MetricTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    TaskCfg,
    Term,
    TerminationTermCfg,
)
from phalanx.rl.cfg import PolicyCfg, PPOCfg
from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg, off_policy_algos
from phalanx.sim.actuators import ActuatorCfg
from phalanx.sim.cameras import CameraCfg
from phalanx.sim.cfg import SimCfg
from phalanx.terrain.generator import TerrainCfg
from phalanx.training.cfg import TrainCfg
from phalanx.training.registry import LearningResult

__all__ = [
    "ActionCfg",
    "ActionController",
    "ActuatorCfg",
    "CameraCfg",
    "CommandTerm",
    "CommandTermCfg",
    "ControllerCfg",
    "CurriculumTermCfg",
    "EventTermCfg",
    "GripperCfg",
    "LearningResult",
    "LowLevelPolicyCfg",
    "MetricTermCfg",
    "ObsTermCfg",
    "PPOCfg",
    "PolicyCfg",
    "RewardTermCfg",
    "SACCfg",
    "SimCfg",
    "TD3Cfg",
    "TaskCfg",
    "Term",
    "TerminationTermCfg",
    "TerrainCfg",
    "TrainCfg",
    "off_policy_algos",
]
