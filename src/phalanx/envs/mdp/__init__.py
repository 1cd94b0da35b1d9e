"""The term library any task may use: observations, rewards, terminations, events, commands,
curricula, metrics, and the state accessors they share. Each module loads on first use
(`phalanx.mdp.observations.joint_pos`); a family's own terms live in its task package's mdp/."""

import importlib
from types import ModuleType

MODULES = (
    "bodies",
    "commands",
    "curriculum",
    "end_effector",
    "events",
    "math",
    "metrics",
    "observations",
    "rewards",
    "state",
    "terminations",
    "velocity_rewards",
)


def __getattr__(name: str) -> ModuleType:
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its term modules: {', '.join(MODULES)}")
