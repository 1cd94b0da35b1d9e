"""The ANYmal-C-like quadruped under a two-level controller (Da and Xie): torque actuators, and a
policy whose actions correct the heuristic high level's command (center-of-mass acceleration,
gait frequency, footholds) that the QP body controller and the swing legs turn into torques at
every physics step (`mdp.quadruped_control`). With zero actions it walks as the heuristic alone."""

from __future__ import annotations

from phalanx import register
from phalanx.cfg import ActionCfg, ActuatorCfg, ControllerCfg, LearningResult, MetricTermCfg, ObsTermCfg, TaskCfg
from phalanx.control.qp import QPSettings
from phalanx.control.quadruped import QuadrupedCfg
from phalanx.tasks.anymal.mdp import quadruped_control
from phalanx.tasks.anymal.velocity import velocity_cfg, velocity_play_cfg, velocity_train_cfg

EFFORT_LIMIT = 80.0
"""ANYmal C's joint torque limit (N m)."""


def anymal_qp_cfg() -> TaskCfg:
    """Follow a commanded base velocity on flat ground through the QP controller."""
    cfg = velocity_cfg("quadruped tracks a velocity command through a QP body controller (RL over QP)")
    through_qp(cfg)
    return cfg


def through_qp(cfg: TaskCfg) -> None:
    """Makes an ANYmal velocity task's actions correct the QP controller's high level."""
    cfg.actuators = [ActuatorCfg(".*", kind="torque", effort_limit=EFFORT_LIMIT)]
    # One physics step per control step: the controller sets the torques at 200 Hz, the policy
    # corrects its command at 50 Hz.
    cfg.sim.decimation = 1
    params = {
        "qp_backend": "auto",
        "qp_block_dim": QPSettings.block_dim,
        "body_controller": "qp",
        "contact_height": 0.02,
        "foothold_reach": 0.0,
        "swing_clearance": 0.0,
        "swing_kp": QuadrupedCfg.swing_kp,
        "swing_kd": QuadrupedCfg.swing_kd,
    }
    # (the keys given here are the flags that set them)
    controller = ControllerCfg(func=quadruped_control.quadruped_control, decimation=4, params=params)
    cfg.actions = ActionCfg(controller=controller)
    cfg.observations["policy"]["gait_phase"] = ObsTermCfg(func=quadruped_control.gait_phase)
    del cfg.rewards["feet_air_time"]  # the gait clock lifts the feet
    cfg.metrics["qp_infeasible"] = MetricTermCfg(func=quadruped_control.qp_infeasible)


register(
    "anymal-qp",
    env_cfg=anymal_qp_cfg,
    train_cfg=lambda: velocity_train_cfg((128, 128, 128), 300),
    play_cfg=velocity_play_cfg,
    result=LearningResult(metric="metrics/lin_vel_xy_error", threshold=0.3, budget_s=150.0, direction="<="),
)
