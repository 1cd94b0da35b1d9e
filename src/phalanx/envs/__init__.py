"""Environments: the VecEnv contract, term-based tasks (`TaskCfg` -> `TaskEnv`) and the term
library (`phalanx.envs.mdp`). Registering and building tasks by name: `phalanx.register`, `phalanx.make`."""

from phalanx.core.vec_env import VecEnv
from phalanx.envs.cfg import (
    ActionCfg,
    ActionController,
    CommandTerm,
    CommandTermCfg,
    ControllerCfg,
    CurriculumTermCfg,
    EventTermCfg,
    LowLevelPolicyCfg,
    MetricTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    TaskCfg,
    Term,
    TerminationTermCfg,
)

__all__ = [
    "ActionCfg",
    "ActionController",
    "CommandTerm",
    "CommandTermCfg",
    "ControllerCfg",
    "CurriculumTermCfg",
    "EventTermCfg",
    "LowLevelPolicyCfg",
    "MetricTermCfg",
    "ObsTermCfg",
    "RewardTermCfg",
    "TaskCfg",
    "Term",
    "TerminationTermCfg",
    "VecEnv",
]
