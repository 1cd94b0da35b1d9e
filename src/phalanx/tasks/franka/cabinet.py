"""The Franka-like arm grasps the handle of a cabinet's drawer and pulls it open
(phalanx/assets/franka_cabinet.xml; Isaac-Open-Drawer-Franka-v0 in spirit)."""

from __future__ import annotations

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import (
    EventTermCfg,
    LearningResult,
    MetricTermCfg,
    ObsTermCfg,
    PolicyCfg,
    PPOCfg,
    RewardTermCfg,
    SimCfg,
    TaskCfg,
    TerminationTermCfg,
    TrainCfg,
)
from phalanx.tasks.franka.mdp import drawer
from phalanx.tasks.franka.reach import ARM, EE, arm_actuators, arm_and_gripper_actions

OPENED = 0.2
"""The opening (m) at which the drawer counts as opened."""


def franka_cabinet_cfg() -> TaskCfg:
    """Open the cabinet's drawer (0 to 0.4 m) by its handle, from the home pose with the arm's
    joints offset by up to 0.1 rad. Actions: joint-position targets around the home pose (1 rad per
    unit, `arm_targets`) and the gripper, open or closed by the sign of the last action. The policy
    sees the joints (the drawer's slide among them), the offset from the gripper to the handle
    and its last action. Rewards (Isaac Lab's weights): the gripper near the handle (2 x
    1 / (1 + d^2)^2, doubled within 20 cm), facing it (0.5), the fingers around it (0.125) and
    closing on it (5 and 0.5), the drawer's opening (7.5 x m, doubled while grasped) and its
    stages (0.5 at 1 cm, 1 more at 20 and 30 cm while grasped), -0.01 x the action rate squared,
    -1e-4 x the joint velocities squared. 8 s episodes at 50 Hz on 5 ms physics steps.
    `opened`: the drawer open at least 20 cm at an episode's end."""
    near = {"site": EE, "handle": "handle"}
    return TaskCfg(
        description="a 7-DoF arm grasps a drawer's handle and pulls it open (Isaac-Open-Drawer-Franka-v0)",
        model=asset("franka_cabinet.xml"),
        episode_length_s=8.0,
        # Buffers from measurement: a pull on the handle holds 4 contacts and 18 constraint rows
        # (the bound from the model's geom pairs is 964 and 3872).
        sim=SimCfg(dt=0.005, decimation=4, nconmax_per_env=24, njmax_per_env=96),
        actuators=arm_actuators(kp=80.0, kd=4.0),
        actions=arm_and_gripper_actions(scale=1.0),
        observations={
            "policy": {
                "joint_pos": ObsTermCfg(func=mdp.observations.joint_pos_rel),
                "joint_vel": ObsTermCfg(func=mdp.observations.joint_vel),
                "to_handle": ObsTermCfg(func=mdp.bodies.site_offset_w, params={"site": EE, "to_site": "handle"}),
                "actions": ObsTermCfg(func=mdp.observations.last_action),
            }
        },
        rewards={
            "approach_handle": RewardTermCfg(func=drawer.approach_handle, weight=2.0, params=near | {"threshold": 0.2}),
            "align_with_handle": RewardTermCfg(func=drawer.align_with_handle, weight=0.5, params=near),
            "fingers_around_handle": RewardTermCfg(
                func=drawer.fingers_around_handle, weight=5.0, params={"offset": 0.04}
            ),
            "grasped_around_handle": RewardTermCfg(func=drawer.grasped_around_handle, weight=0.125),
            "close_on_handle": RewardTermCfg(
                func=drawer.close_on_handle,
                weight=0.5,
                params=near | {"threshold": 0.03, "open_position": 0.04, "fingers": "panda_finger_joint[12]"},
            ),
            "open_drawer_bonus": RewardTermCfg(func=drawer.open_drawer_bonus, weight=7.5),
            "drawer_stages": RewardTermCfg(func=drawer.drawer_stages, weight=1.0),
            "action_rate": RewardTermCfg(func=mdp.velocity_rewards.action_rate_l2, weight=-1e-2),
            "joint_vel": RewardTermCfg(func=mdp.rewards.joint_vel_l2, weight=-1e-4, params={"joints": ARM}),
        },
        terminations={"time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True)},
        metrics={
            "handle_distance": MetricTermCfg(func=mdp.bodies.site_distance, params={"site": EE, "to_site": "handle"}),
            "drawer_opening": MetricTermCfg(func=drawer.drawer_opening, final=True),
            "opened": MetricTermCfg(func=drawer.drawer_opened, params={"distance": OPENED}, final=True),
        },
        events={
            "reset_arm": EventTermCfg(
                func=mdp.events.reset_joints_by_offset,
                mode="reset",
                params={"joints": ARM, "position_range": (-0.1, 0.1)},
            ),
        },
        num_envs=4096,
    )


def franka_cabinet_train_cfg() -> TrainCfg:
    """rsl_rl's CabinetPPORunnerCfg: 256-128-64 ELU networks, 96-step rollouts, 8 epochs of 8
    mini-batches."""
    return TrainCfg(
        max_iterations=400,
        num_steps_per_env=96,
        spread_episode_ends=True,  # episodes end only by time out
        policy=PolicyCfg(actor_hidden_dims=(256, 128, 64), critic_hidden_dims=(256, 128, 64)),
        algo=PPOCfg(
            learning_rate=5e-4,
            entropy_coef=1e-3,
            gamma=0.99,
            lam=0.95,
            desired_kl=0.02,
            num_learning_epochs=8,
            num_mini_batches=8,
        ),
    )


register(
    "franka-cabinet",
    env_cfg=franka_cabinet_cfg,
    train_cfg=franka_cabinet_train_cfg,
    result=LearningResult(metric="metrics/opened", threshold=0.9, budget_s=180.0),
)
