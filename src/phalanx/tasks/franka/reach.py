"""A Franka-Panda-like arm on a table (phalanx/assets/franka_reach.xml: the arm of franka.xml and a
marker of the goal for videos): reach a commanded pose with the end effector
(Isaac-Reach-Franka-v0 with joint-position actions, Isaac-Reach-Franka-IK-Rel-v0 with
differential IK)."""

from __future__ import annotations

import math

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import ActuatorCfg, LearningResult, PolicyCfg, PPOCfg, SimCfg, TrainCfg
from phalanx.envs.cfg import (
    ActionCfg,
    CommandTermCfg,
    ControllerCfg,
    CurriculumTermCfg,
    EventTermCfg,
    GripperCfg,
    MetricTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    TaskCfg,
    TerminationTermCfg,
    exact_policy_observations,
)
from phalanx.tasks.franka.mdp.differential_ik import differential_ik

ARM = "panda_joint[1-7]"
EE = "ee"
BASE = "panda_link0"
SHOULDER, FOREARM = "panda_joint[1-4]", "panda_joint[5-7]"
TARGET_REACH = 5.0
"""How far (rad) a joint target may lie from the home pose; actions are clipped to it. Past every
joint's range by more than the error that saturates its torque (effort limit / kp: 1.1 rad for
the shoulder, 0.15 for the forearm, at kp 80), so a clipped target still drives a joint at full
torque from anywhere in its range: the clip takes nothing from the arm. It bounds the last action
the policy observes, which an unbounded policy can feed back into ever larger actions."""


def arm_actuators(kp: float, kd: float) -> list[ActuatorCfg]:
    """Position actuators on the arm at Franka's torque limits (87 N m shoulder, 12 N m forearm;
    Isaac Lab's FRANKA_PANDA_CFG gains are 80 and 4, its high-PD variant for IK 400 and 80)."""
    return [
        ActuatorCfg(SHOULDER, kp=kp, kd=kd, effort_limit=87.0),
        ActuatorCfg(FOREARM, kp=kp, kd=kd, effort_limit=12.0),
    ]


def arm_targets(scale: float) -> ActionCfg:
    """Joint-position targets for the arm around the home pose, `scale` rad per unit, clipped at
    `TARGET_REACH` (Isaac Lab's are unclipped)."""
    return ActionCfg(actuators=ARM, scale=scale, use_default_offset=True, clip=TARGET_REACH / scale)


def arm_and_gripper_actions(scale: float) -> ActionCfg:
    """`arm_targets` and one more action that opens (>= 0) or closes (< 0) the gripper."""
    actions = arm_targets(scale)
    actions.gripper = GripperCfg("gripper", open=0.04, closed=0.0)
    return actions


def franka_reach_cfg() -> TaskCfg:
    """Move the end effector to a pose drawn every 4 s in front of the robot (0.35-0.65 m ahead,
    +-0.2 m aside, 0.15-0.5 m up, pointing down, any yaw), with joint-position targets around the
    home pose (0.5 rad per unit, `arm_targets`). The policy sees the joints, the command,
    the end effector's error from it (position and rotation vector, base frame: the arm's forward
    kinematics, which a real arm's controller knows) and its last action. Rewards (Isaac Lab's
    weights): -0.2 x the distance, 0.1 x (1 - tanh(distance / 0.1)), -0.1 x the orientation error
    (rad), -1e-4 x the action rate and the joint velocities squared, raised to -5e-3 and -1e-3 from
    4500 env steps on (Isaac Lab's curriculum). 12 s episodes at 30 Hz, three commands each;
    `final_position_error` is the error at an episode's end, 4 s after its last command."""
    pose = {"site": EE, "command": "ee_pose"}
    noisy = {"noise": 0.01}
    return TaskCfg(
        description="a 7-DoF arm moves its end effector to commanded poses (Isaac-Reach-Franka-v0)",
        model=asset("franka_reach.xml"),
        episode_length_s=12.0,
        sim=SimCfg(dt=0.005, decimation=6),
        actuators=arm_actuators(kp=80.0, kd=4.0),
        actions=arm_targets(scale=0.5),
        observations={
            "policy": {
                "joint_pos": ObsTermCfg(func=mdp.observations.joint_pos_rel, **noisy),
                "joint_vel": ObsTermCfg(func=mdp.observations.joint_vel, **noisy),
                "pose_command": ObsTermCfg(func=mdp.observations.generated_commands, params={"command": "ee_pose"}),
                "pose_error": ObsTermCfg(func=mdp.end_effector.site_pose_error_b, params=pose),
                "actions": ObsTermCfg(func=mdp.observations.last_action),
            }
        },
        commands={
            "ee_pose": CommandTermCfg(
                func=mdp.end_effector.uniform_pose,
                resampling_time_range_s=(4.0, 4.0),
                params={
                    "base": BASE,
                    "pos_x": (0.35, 0.65),
                    "pos_y": (-0.2, 0.2),
                    "pos_z": (0.15, 0.5),
                    "pitch": (math.pi, math.pi),
                    "yaw": (-math.pi, math.pi),
                    "marker": "goal",
                },
            ),
        },
        rewards={
            "position": RewardTermCfg(func=mdp.end_effector.site_position_error, weight=-0.2, params=pose),
            "position_fine": RewardTermCfg(
                func=mdp.end_effector.site_position_error_tanh, weight=0.1, params=pose | {"std": 0.1}
            ),
            "orientation": RewardTermCfg(func=mdp.end_effector.site_orientation_error, weight=-0.1, params=pose),
            "action_rate": RewardTermCfg(func=mdp.velocity_rewards.action_rate_l2, weight=-1e-4),
            "joint_vel": RewardTermCfg(func=mdp.rewards.joint_vel_l2, weight=-1e-4, params={"joints": ARM}),
        },
        terminations={"time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True)},
        curriculum={
            # Once the arm reaches, it must move smoothly (4500 env steps: about 190 iterations).
            name: CurriculumTermCfg(
                func=mdp.curriculum.reward_weight, params={"reward": name, "weight": weight, "num_steps": 4500}
            )
            for name, weight in (("action_rate", -5e-3), ("joint_vel", -1e-3))
        },
        metrics={
            "position_error": MetricTermCfg(func=mdp.end_effector.site_position_error, params=pose),
            "orientation_error": MetricTermCfg(func=mdp.end_effector.site_orientation_error, params=pose),
            # At an episode's end: 4 s after its last command, where the reach is judged.
            "final_position_error": MetricTermCfg(func=mdp.end_effector.site_position_error, params=pose, final=True),
            "final_orientation_error": MetricTermCfg(
                func=mdp.end_effector.site_orientation_error, params=pose, final=True
            ),
        },
        events={
            "reset_arm": EventTermCfg(
                func=mdp.events.reset_joints_by_scale,
                mode="reset",
                params={"joints": ARM, "position_range": (0.5, 1.5)},
            ),
        },
        num_envs=4096,
    )


def franka_reach_ik_cfg() -> TaskCfg:
    """franka-reach with differential IK actions: end-effector pose deltas (5 cm and 0.1 rad per
    unit, base frame) turned into joint targets by damped least squares every env step, on stiffer
    joints (Isaac Lab's high-PD Franka: 400 and 80)."""
    cfg = franka_reach_cfg()
    cfg.description = "franka-reach with end-effector pose deltas, differential IK (Isaac-Reach-Franka-IK-Rel-v0)"
    cfg.actuators = arm_actuators(kp=400.0, kd=80.0)
    cfg.actions = ActionCfg(controller=ControllerCfg(func=differential_ik, decimation=1))
    return cfg


def franka_train_cfg() -> TrainCfg:
    """rsl_rl's FrankaReachPPORunnerCfg: 64-64 ELU networks, 24-step rollouts, 8 epochs."""
    return TrainCfg(
        max_iterations=1000,
        num_steps_per_env=24,
        spread_episode_ends=True,  # episodes end only by time out
        policy=PolicyCfg(actor_hidden_dims=(64, 64), critic_hidden_dims=(64, 64)),
        algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.001, num_learning_epochs=8),
    )


register(
    "franka-reach",
    env_cfg=franka_reach_cfg,
    train_cfg=franka_train_cfg,
    play_cfg=exact_policy_observations,
    result=LearningResult(metric="metrics/final_position_error", threshold=0.01, budget_s=120.0, direction="<="),
)
register(
    "franka-reach-ik",
    env_cfg=franka_reach_ik_cfg,
    train_cfg=franka_train_cfg,
    play_cfg=exact_policy_observations,
    result=LearningResult(metric="metrics/final_position_error", threshold=0.02, budget_s=150.0, direction="<="),
)
