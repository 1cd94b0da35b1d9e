"""Environments: the VecEnv contract, term-based tasks and the task registry."""

from phalanx.envs.cfg import (
    ActionCfg,
    CommandTerm,
    CommandTermCfg,
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
from phalanx.envs.registry import TASKS, UnknownTaskError, make, task_cfg
from phalanx.envs.task_env import TaskEnv
from phalanx.envs.vec_env import VecEnv

__all__ = [
    "TASKS",
    "ActionCfg",
    "CommandTerm",
    "CommandTermCfg",
    "CurriculumTermCfg",
    "EventTermCfg",
    "LowLevelPolicyCfg",
    "MetricTermCfg",
    "ObsTermCfg",
    "RewardTermCfg",
    "TaskCfg",
    "TaskEnv",
    "Term",
    "TerminationTermCfg",
    "UnknownTaskError",
    "VecEnv",
    "make",
    "task_cfg",
]
