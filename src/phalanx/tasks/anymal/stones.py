"""The ANYmal-C-like quadruped on stepping stones of random height and spacing over holes (Da and
Xie's benchmark), with the terrain curriculum and a height scan: walk forward at the
commanded speed through the QP controller (`anymal-stones-qp`) or with joint targets as
anymal-rough does (`anymal-stones`). Played with zero actions, `anymal-stones-qp` is the
heuristic controller alone: fixed trot, Raibert footholds moved to the nearest level ground of
the stones, swings lifted over the stones in their way."""

from __future__ import annotations

from phalanx import register
from phalanx.cfg import LearningResult, TaskCfg, TerrainCfg
from phalanx.tasks.anymal.qp import through_qp
from phalanx.tasks.anymal.velocity import on_terrain, rough_weights, velocity_cfg, velocity_play_cfg, velocity_train_cfg


def stones_terrain() -> TerrainCfg:
    """Ten levels of random stones (from 0.6 m blocks without gaps, +-2 cm, to 0.3 m stones
    10-30 cm apart, +-15 cm, over holes 5 cm to 1 m deep), four tiles of each, on a 5 cm grid:
    on the 10 cm grid of the other terrains the first gaps are holes 20 cm wide, the whole step
    from level 0 to 1."""
    return TerrainCfg(
        num_rows=10,
        num_cols=4,
        horizontal_scale=0.05,
        proportions={"random_stones": 1.0},
        border_width=4.0,
        exclude_bodies=("base",),
    )


def _on_stones(cfg: TaskCfg) -> None:
    on_terrain(cfg, stones_terrain())
    velocity = cfg.commands["base_velocity"].params
    # Forward over the stones, steering to a heading: no sideways walking, no standing still.
    velocity.update(lin_vel_x=(0.3, 0.8), lin_vel_y=(0.0, 0.0), standing=0.0)


def anymal_stones_qp_cfg() -> TaskCfg:
    cfg = velocity_cfg("quadruped crosses stepping stones through a QP body controller (RL over QP)")
    through_qp(cfg)
    # The high level looks at the stones: footholds on level ground within 15 cm of the asked ones,
    # swings lifted over the stones in their way, then 8 cm (the lift over flat ground).
    cfg.actions.controller.params.update(foothold_reach=0.15, swing_clearance=0.08)
    _on_stones(cfg)
    del cfg.rewards["flat_orientation_l2"]
    return cfg


def anymal_stones_cfg() -> TaskCfg:
    cfg = velocity_cfg("quadruped crosses stepping stones with joint-position actions")
    _on_stones(cfg)
    rough_weights(cfg)
    return cfg


register(
    "anymal-stones-qp",
    env_cfg=anymal_stones_qp_cfg,
    train_cfg=lambda: velocity_train_cfg((512, 256, 128), 1500),
    play_cfg=velocity_play_cfg,
    result=LearningResult(metric="metrics/lin_vel_xy_error", threshold=0.35, budget_s=150.0, direction="<="),
)
register(
    "anymal-stones",
    env_cfg=anymal_stones_cfg,
    train_cfg=lambda: velocity_train_cfg((512, 256, 128), 1500),
    play_cfg=velocity_play_cfg,
    result=LearningResult(metric="metrics/lin_vel_xy_error", threshold=0.3, budget_s=120.0, direction="<="),
)
