"""Trains shadow-cube with the cube's orientation given as rotation matrices instead of
quaternions: a teacher whose actions are one function of what a camera can tell.

    python tools/shadow_rotation_probe.py [phalanx train options]

The simulation's quaternion of the cube takes either sign (q and -q turn alike; which one is the
cube's history), and a quaternion teacher acts differently on the two: a pixel student, which
cannot tell them apart, must imitate two policies at once (tools/imitation_probe.py measures
what that costs). Registers `shadow-cube-rotation`, shadow-cube with `cube_quat` and
`cube_to_goal` (actor and critic) replaced by `object_rotation` and `object_goal_rotation`, and
runs `phalanx train shadow-cube-rotation` with the options given. Its runs teach
shadow-cube-vision as shadow-cube's do (`phalanx train shadow-cube-vision --teacher RUN`).
"""

from __future__ import annotations

import dataclasses
import sys

from phalanx.cli import main
from phalanx.envs.cfg import ObsTermCfg
from phalanx.tasks.shadow_hand.cube import shadow_cube_cfg, shadow_cube_train_cfg
from phalanx.tasks.shadow_hand.mdp import manipulation
from phalanx.training.registry import register

ROTATIONS = {
    "cube_quat": ("cube_rotation", ObsTermCfg(func=manipulation.object_rotation)),
    "cube_to_goal": ("cube_to_goal_rotation", ObsTermCfg(func=manipulation.object_goal_rotation)),
}


def rotation_cfg():
    cfg = shadow_cube_cfg()

    def turned(group: dict) -> dict:
        return dict(ROTATIONS[name] if name in ROTATIONS else (name, term) for name, term in group.items())

    return dataclasses.replace(
        cfg,
        description="shadow-cube, the cube's orientation as rotation matrices",
        observations={group: turned(terms) for group, terms in cfg.observations.items()},
    )


if __name__ == "__main__":
    register("shadow-cube-rotation", env_cfg=rotation_cfg, train_cfg=shadow_cube_train_cfg)
    sys.exit(main(["train", "shadow-cube-rotation", *sys.argv[1:]]))
