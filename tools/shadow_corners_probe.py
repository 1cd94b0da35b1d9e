"""Trains shadow-cube with the pixel task's actor inputs but the cube's true corners in place of
the encoder's prediction: what the pixel policy could learn with a perfect encoder.

    python tools/shadow_corners_probe.py [phalanx train options]

Registers `shadow-cube-corners` (shadow-cube-vision's actor observations, the cube's corners
read from the state, no camera; the privileged critic and 2048 envs as shadow-cube-vision) and
runs `phalanx train shadow-cube-corners` with the options given.
"""

from __future__ import annotations

import dataclasses
import sys

from phalanx.cli import main
from phalanx.tasks.shadow_hand.cube import shadow_cube_train_cfg
from phalanx.training.registry import env_cfg, register


def corners_cfg():
    vision = env_cfg("shadow-cube-vision")
    policy = vision.observations["policy"] | {"cube_keypoints": vision.observations["keypoints"]["cube"]}
    return dataclasses.replace(
        vision,
        description="shadow-cube-vision's actor inputs with the cube's true corners",
        cameras={},
        observations={"policy": policy, "critic": vision.observations["critic"]},
    )


if __name__ == "__main__":
    register("shadow-cube-corners", env_cfg=corners_cfg, train_cfg=shadow_cube_train_cfg)
    sys.exit(main(["train", "shadow-cube-corners", "--num-envs", "2048", *sys.argv[1:]]))
