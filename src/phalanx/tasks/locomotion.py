"""Run toward a far target: Ant and Humanoid with the terms of Isaac-Ant-v0 / Isaac-Humanoid-v0."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import (
    ActionCfg,
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
    off_policy_algos,
)

TARGET_POS = (1000.0, 0.0, 0.0)
"""The target lies 1 km along +x: far enough that no episode reaches it."""


@dataclass
class _Robot:
    """What differs between the robots of this family."""

    asset: str
    feet: list[str]
    action_scale: float
    action_clip: float
    ang_vel_scale: float
    joint_vel_scale: float
    feet_force_scale: float
    alive_weight: float
    action_l2_weight: float
    energy_weight: float
    joint_limits_weight: float
    joint_limits_threshold: float
    min_height: float


def _locomotion_cfg(description: str, robot: _Robot) -> TaskCfg:
    target = {"target_pos": TARGET_POS}
    return TaskCfg(
        description=description,
        model=asset(robot.asset),
        episode_length_s=16.0,
        # A solver budget of 4 iterations (line search 6) instead of MuJoCo's 100 (50): more env
        # steps/s to the same returns (docs/speed.md, "Defaults chosen by measurement").
        sim=SimCfg(decimation=2, body_forces=True, iterations=4, ls_iterations=6, unroll_solver=True),
        actions=ActionCfg(actuators=".*", scale=robot.action_scale, clip=robot.action_clip),
        observations={
            "policy": {
                "base_height": ObsTermCfg(func=mdp.observations.root_height),
                "base_lin_vel": ObsTermCfg(func=mdp.observations.root_lin_vel_b),
                "base_ang_vel": ObsTermCfg(func=mdp.observations.root_ang_vel_b, scale=robot.ang_vel_scale),
                "base_yaw_roll": ObsTermCfg(func=mdp.observations.root_yaw_roll),
                "base_angle_to_target": ObsTermCfg(func=mdp.observations.root_angle_to_target, params=target),
                "base_up_proj": ObsTermCfg(func=mdp.observations.root_up_proj),
                "base_heading_proj": ObsTermCfg(func=mdp.observations.root_heading_proj, params=target),
                "joint_pos_norm": ObsTermCfg(func=mdp.observations.joint_pos_limit_normalized),
                "joint_vel_rel": ObsTermCfg(func=mdp.observations.joint_vel, scale=robot.joint_vel_scale),
                "feet_body_forces": ObsTermCfg(
                    func=mdp.observations.body_wrench, params={"bodies": robot.feet}, scale=robot.feet_force_scale
                ),
                "actions": ObsTermCfg(func=mdp.observations.last_action),
            }
        },
        rewards={
            "progress": RewardTermCfg(func=mdp.rewards.progress, weight=1.0, params=target),
            "alive": RewardTermCfg(func=mdp.rewards.is_alive, weight=robot.alive_weight),
            "upright": RewardTermCfg(func=mdp.rewards.upright_bonus, weight=0.1, params={"threshold": 0.93}),
            "move_to_target": RewardTermCfg(
                func=mdp.rewards.move_to_target_bonus, weight=0.5, params={"threshold": 0.8, **target}
            ),
            "action_l2": RewardTermCfg(func=mdp.rewards.action_l2, weight=robot.action_l2_weight),
            "energy": RewardTermCfg(func=mdp.rewards.power_consumption, weight=robot.energy_weight),
            "joint_pos_limits": RewardTermCfg(
                func=mdp.rewards.joint_pos_limits_penalty_ratio,
                weight=robot.joint_limits_weight,
                params={"threshold": robot.joint_limits_threshold},
            ),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True),
            "torso_height": TerminationTermCfg(
                func=mdp.terminations.root_height_below, params={"minimum_height": robot.min_height}
            ),
        },
        metrics={
            # m/s toward the target, averaged over the episode: how fast it runs.
            "speed_to_target": MetricTermCfg(func=mdp.metrics.speed_to_target, params=target),
        },
        events={
            "reset_robot_joints": EventTermCfg(
                func=mdp.events.reset_joints_by_offset,
                mode="reset",
                params={"position_range": (-0.2, 0.2), "velocity_range": (-0.1, 0.1)},
            ),
        },
        reward_scale_by_dt=True,
        num_envs=4096,
    )


def ant_cfg() -> TaskCfg:
    """Ant (8 hinges, gear 15): torque = 7.5 N m per unit action, clipped at the motors' +-15 N m."""
    robot = _Robot(
        asset="ant.xml",
        feet=["front_left_foot", "front_right_foot", "left_back_foot", "right_back_foot"],
        action_scale=0.5,
        action_clip=2.0,
        ang_vel_scale=1.0,
        joint_vel_scale=0.2,
        feet_force_scale=0.1,
        alive_weight=0.5,
        action_l2_weight=-0.005,
        energy_weight=-0.05,
        joint_limits_weight=-0.1,
        joint_limits_threshold=0.99,
        min_height=0.31,
    )
    return _locomotion_cfg("ant runs toward a far target (Isaac-Ant-v0)", robot)


def humanoid_cfg() -> TaskCfg:
    """Humanoid (21 hinges): torque = gear * action, actions clipped to [-1, 1]."""
    robot = _Robot(
        asset="humanoid.xml",
        feet=["left_foot", "right_foot"],
        action_scale=1.0,
        action_clip=1.0,
        ang_vel_scale=0.25,
        joint_vel_scale=0.1,
        feet_force_scale=0.01,
        alive_weight=2.0,
        action_l2_weight=-0.01,
        energy_weight=-0.005,
        joint_limits_weight=-0.25,
        joint_limits_threshold=0.98,
        min_height=0.8,
    )
    return _locomotion_cfg("humanoid runs toward a far target (Isaac-Humanoid-v0)", robot)


def locomotion_train_cfg() -> TrainCfg:
    """Larger networks, observation normalization, no entropy bonus (rl_games' Ant/Humanoid settings in spirit)."""
    return TrainCfg(
        max_iterations=1000,
        num_steps_per_env=32,
        spread_episode_ends=True,  # a running robot's episodes end by time out
        empirical_normalization=True,
        policy=PolicyCfg(actor_hidden_dims=(400, 200, 100), critic_hidden_dims=(400, 200, 100)),
        algo=PPOCfg(learning_rate=5e-4, entropy_coef=0.0),
    )


register(
    "ant",
    env_cfg=ant_cfg,
    train_cfg=locomotion_train_cfg,
    result=LearningResult(metric="metrics/speed_to_target", threshold=1.5, budget_s=60.0),
    algos=off_policy_algos(v_min=-30.0, v_max=30.0, n_step=3),  # the support: docs/training.md
)
register(
    "humanoid",
    env_cfg=humanoid_cfg,
    train_cfg=locomotion_train_cfg,
    result=LearningResult(metric="metrics/speed_to_target", threshold=3.0, budget_s=120.0),
    algos=off_policy_algos(v_min=-60.0, v_max=60.0, n_step=3),
)
