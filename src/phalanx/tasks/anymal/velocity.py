"""The ANYmal-C-like quadruped: velocity tracking with the terms and weights of Isaac Lab's
Isaac-Velocity-{Flat,Rough}-Anymal-C-v0 (legged_gym's rewards), on a plane and on the generated
terrain with a height scan and the terrain curriculum; and goal navigation through a frozen
walking policy (Isaac-Navigation-Flat-Anymal-C-v0)."""

from __future__ import annotations

import math

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import LearningResult, PolicyCfg, PPOCfg, SimCfg, TerrainCfg, TrainCfg, off_policy_algos
from phalanx.envs.cfg import (
    ActionCfg,
    CommandTermCfg,
    EventTermCfg,
    LowLevelPolicyCfg,
    MetricTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    TaskCfg,
    TerminationTermCfg,
    exact_policy_observations,
)
from phalanx.tasks.anymal.mdp import navigation

LEGS = ("LF", "RF", "LH", "RH")
FEET = [f"{leg}_foot_contact" for leg in LEGS]
THIGHS = [f"{leg}_thigh_contact" for leg in LEGS]
CMD = {"command": "base_velocity"}


MAX_QVEL = 200.0
"""|qvel| (rad/s or m/s) beyond which an anymal world has diverged; random actions reach 48. On
the terrain one such world, reset only once it went NaN, made three iterations' updates non-finite."""
ACTION_CLIP = 10.0
"""Joint-target actions are clipped at 10 (5 rad from the default pose at scale 0.5; Isaac Lab's
are unclipped). MuJoCo clamps each target to its joint's range (anymal.xml's inheritrange), whose
widest spans 2.7 rad, so the clip never changes a target; it only bounds the last action the
policy observes, which an unbounded policy could feed back into ever larger actions."""


def anymal_flat_cfg() -> TaskCfg:
    """Follow a commanded base velocity (forward, lateral, yaw rate) on flat ground."""
    return velocity_cfg("quadruped tracks a velocity command (Isaac-Velocity-Flat-Anymal-C-v0)")


def anymal_rough_cfg() -> TaskCfg:
    """The same on rough terrain (stairs, slopes, rough ground, obstacles) with a height scan in
    the observation and the terrain curriculum; Isaac Lab's rough weights (lighter torque
    penalty, less air-time reward, no flat-orientation penalty)."""
    cfg = velocity_cfg("quadruped tracks a velocity command on terrain (Isaac-Velocity-Rough-Anymal-C-v0)")
    on_terrain(cfg, TerrainCfg(border_width=8.0, exclude_bodies=("base",)))
    rough_weights(cfg)
    return cfg


def rough_weights(cfg: TaskCfg) -> None:
    """Isaac Lab's rough-terrain reward weights on the flat task's terms: a lighter torque
    penalty, less air-time reward, no flat-orientation penalty."""
    cfg.rewards["dof_torques_l2"].weight = -1.0e-5
    cfg.rewards["feet_air_time"].weight = 0.125
    del cfg.rewards["flat_orientation_l2"]


def on_terrain(cfg: TaskCfg, terrain: TerrainCfg) -> None:
    """Puts a velocity task on `terrain` (whose `exclude_bodies` must hold "base"): a height scan
    in the policy's observation, an episode that ends when the base touches the terrain, the
    terrain curriculum on the velocity command, and contact buffers sized for heightfields."""
    cfg.observations["policy"]["height_scan"] = ObsTermCfg(
        func=mdp.observations.height_scan, clip=(-1.0, 1.0), noise=0.1
    )
    # The base does not collide with the terrain: touching it ends the episode, which the base
    # site's points below the terrain's surface tell for a fraction of the heightfield collision
    # of the base box (docs/speed.md, "Defaults chosen by measurement").
    cfg.terrain = terrain
    touch = TerminationTermCfg(func=mdp.terminations.site_touches_terrain, params={"site": "base"})
    cfg.terminations["base_contact"] = touch
    cfg.terrain_command = "base_velocity"
    # Contacts with the heightfield: at most 50 per geom pair by MuJoCo's bound (850 per robot);
    # rollouts with random actions on every sub-terrain use far fewer (test_anymal_rough).
    cfg.sim.nconmax_per_env = 48
    cfg.sim.njmax_per_env = 160


def velocity_cfg(description: str) -> TaskCfg:
    """The flat-ground velocity task (anymal-flat) under another `description`."""
    return TaskCfg(
        description=description,
        model=asset("anymal.xml"),
        episode_length_s=20.0,
        # A solver budget of 4 iterations (line search 6) instead of MuJoCo's 100 (50): more env
        # steps/s, and runs on flat ground and terrain learn at least as far per iteration
        # (docs/speed.md, "Defaults chosen by measurement").
        sim=SimCfg(dt=0.005, decimation=4, max_qvel=MAX_QVEL, iterations=4, ls_iterations=6, unroll_solver=True),
        actions=ActionCfg(actuators=".*", scale=0.5, use_default_offset=True, clip=ACTION_CLIP),
        commands={
            "base_velocity": CommandTermCfg(
                func=mdp.commands.uniform_velocity,
                resampling_time_range_s=(10.0, 10.0),
                params={
                    "lin_vel_x": (-1.0, 1.0),
                    "lin_vel_y": (-1.0, 1.0),
                    "ang_vel_z": (-1.0, 1.0),
                    "standing": 0.02,
                    "heading": (-math.pi, math.pi),  # every env steers to a target heading
                    "heading_envs": 1.0,
                    "heading_stiffness": 0.5,
                },
            )
        },
        observations={
            "policy": {
                # Isaac Lab's sensor noise (uniform, +-).
                "base_lin_vel": ObsTermCfg(func=mdp.observations.root_lin_vel_b, noise=0.1),
                "base_ang_vel": ObsTermCfg(func=mdp.observations.root_ang_vel_b, noise=0.2),
                "projected_gravity": ObsTermCfg(func=mdp.observations.projected_gravity, noise=0.05),
                "velocity_commands": ObsTermCfg(func=mdp.observations.generated_commands, params=CMD),
                "joint_pos": ObsTermCfg(func=mdp.observations.joint_pos_rel, noise=0.01),
                "joint_vel": ObsTermCfg(func=mdp.observations.joint_vel, noise=1.5),
                "actions": ObsTermCfg(func=mdp.observations.last_action),
            }
        },
        rewards={
            "track_lin_vel_xy_exp": RewardTermCfg(
                func=mdp.velocity_rewards.track_lin_vel_xy_exp, weight=1.0, params={**CMD, "std": 0.5}
            ),
            "track_ang_vel_z_exp": RewardTermCfg(
                func=mdp.velocity_rewards.track_ang_vel_z_exp, weight=0.5, params={**CMD, "std": 0.5}
            ),
            "lin_vel_z_l2": RewardTermCfg(func=mdp.velocity_rewards.lin_vel_z_l2, weight=-2.0),
            "ang_vel_xy_l2": RewardTermCfg(func=mdp.velocity_rewards.ang_vel_xy_l2, weight=-0.05),
            "dof_torques_l2": RewardTermCfg(func=mdp.velocity_rewards.joint_torques_l2, weight=-2.5e-5),
            "dof_acc_l2": RewardTermCfg(func=mdp.velocity_rewards.joint_acc_l2, weight=-2.5e-7),
            "action_rate_l2": RewardTermCfg(func=mdp.velocity_rewards.action_rate_l2, weight=-0.01),
            "feet_air_time": RewardTermCfg(
                func=mdp.velocity_rewards.feet_air_time, weight=0.5, params={"sensors": FEET, **CMD, "threshold": 0.5}
            ),
            "undesired_contacts": RewardTermCfg(
                func=mdp.velocity_rewards.touch_count_above, weight=-1.0, params={"sensors": THIGHS, "threshold": 1.0}
            ),
            "flat_orientation_l2": RewardTermCfg(func=mdp.velocity_rewards.flat_orientation_l2, weight=-5.0),
        },
        metrics={
            "lin_vel_xy_error": MetricTermCfg(func=mdp.metrics.lin_vel_xy_error, params=CMD),
            "ang_vel_z_error": MetricTermCfg(func=mdp.metrics.ang_vel_z_error, params=CMD),
        },
        terminations=_fall_or_time_out(),
        events={
            # One friction coefficient per world for feet, legs, base and ground (Isaac Lab keeps
            # its 0.8 static / 0.6 dynamic fixed; MuJoCo has one coefficient, drawn around them).
            "physics_material": EventTermCfg(
                func=mdp.events.randomize_friction, mode="startup", params={"friction_range": (0.6, 1.0)}
            ),
            "add_base_mass": EventTermCfg(
                func=mdp.events.add_body_mass, mode="startup", params={"bodies": ["base"], "mass_range": (-5.0, 5.0)}
            ),
            "reset_base": EventTermCfg(
                func=mdp.events.reset_root_state_uniform,
                mode="reset",
                params={"xy_range": (-0.5, 0.5), "yaw_range": (-math.pi, math.pi), "velocity_range": (-0.5, 0.5)},
            ),
            "reset_robot_joints": EventTermCfg(
                func=mdp.events.reset_joints_by_scale, mode="reset", params={"position_range": (0.5, 1.5)}
            ),
            "push_robot": EventTermCfg(
                func=mdp.events.push_by_setting_velocity,
                mode="interval",
                interval_range_s=(10.0, 15.0),
                params={"velocity_range": (-0.5, 0.5)},
            ),
        },
        reward_scale_by_dt=True,
        num_envs=4096,
    )


def anymal_nav_cfg() -> TaskCfg:
    """Walk to a goal 3 m away and face its heading (Isaac-Navigation-Flat-Anymal-C-v0): the
    policy commands a frozen `anymal-flat` walking policy at 5 Hz, which runs at 50 Hz."""
    goal = {"command": "pose_command"}
    return TaskCfg(
        description="quadruped walks to a goal through a frozen anymal-flat policy (Isaac-Navigation-Flat-Anymal-C-v0)",
        model=asset("anymal.xml"),
        episode_length_s=8.0,
        sim=SimCfg(dt=0.005, decimation=4, max_qvel=MAX_QVEL),
        actions=ActionCfg(scale=1.0, clip=None, low_level=LowLevelPolicyCfg(task="anymal-flat", decimation=10)),
        commands={
            "base_velocity": CommandTermCfg(
                func=mdp.commands.held_command, resampling_time_range_s=(1.0e9, 1.0e9), params={"dim": 3}
            ),
            "pose_command": CommandTermCfg(
                func=mdp.commands.uniform_pose_2d,
                resampling_time_range_s=(1.0e9, 1.0e9),  # one goal per episode, drawn at reset
                params={"pos_x": (-3.0, 3.0), "pos_y": (-3.0, 3.0), "heading": (-math.pi, math.pi)},
            ),
        },
        observations={
            "policy": {
                "base_lin_vel": ObsTermCfg(func=mdp.observations.root_lin_vel_b),
                "projected_gravity": ObsTermCfg(func=mdp.observations.projected_gravity),
                "pose_command": ObsTermCfg(func=mdp.observations.generated_commands, params=goal),
            }
        },
        rewards={
            "termination_penalty": RewardTermCfg(func=mdp.rewards.is_terminated, weight=-400.0),
            "position_tracking": RewardTermCfg(
                func=navigation.position_tracking_tanh, weight=0.5, params={**goal, "std": 2.0}
            ),
            "position_tracking_fine_grained": RewardTermCfg(
                func=navigation.position_tracking_tanh, weight=0.5, params={**goal, "std": 0.2}
            ),
            "orientation_tracking": RewardTermCfg(func=navigation.heading_error_abs, weight=-0.2, params=goal),
        },
        metrics={
            "goal_distance": MetricTermCfg(func=navigation.goal_distance, params=goal, final=True),
            "goal_reached": MetricTermCfg(func=navigation.goal_reached, params={**goal, "distance": 0.5}, final=True),
        },
        terminations=_fall_or_time_out(),
        events={
            "reset_base": EventTermCfg(
                func=mdp.events.reset_root_state_uniform,
                mode="reset",
                params={"xy_range": (-0.5, 0.5), "yaw_range": (-math.pi, math.pi)},
            ),
        },
        reward_scale_by_dt=True,
        num_envs=4096,
    )


def _fall_or_time_out() -> dict[str, TerminationTermCfg]:
    """The episode ends at its time limit, or when the base touches the ground."""
    return {
        "time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True),
        "base_contact": TerminationTermCfg(
            func=mdp.terminations.touch_above, params={"sensors": ["base_contact"], "threshold": 1.0}
        ),
    }


def velocity_play_cfg(cfg: TaskCfg) -> None:
    """Playing a walking policy: exact observations and no pushes (Isaac Lab's PLAY variants)."""
    exact_policy_observations(cfg)
    cfg.events.pop("push_robot", None)


def velocity_train_cfg(hidden: tuple[int, ...], max_iterations: int) -> TrainCfg:
    """rsl_rl's AnymalC{Flat,Rough}PPORunnerCfg."""
    return TrainCfg(
        max_iterations=max_iterations,
        num_steps_per_env=24,
        spread_episode_ends=True,  # a walking robot's episodes end by time out
        policy=PolicyCfg(actor_hidden_dims=hidden, critic_hidden_dims=hidden),
        algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
    )


def nav_train_cfg() -> TrainCfg:
    """rsl_rl's NavigationEnvPPORunnerCfg."""
    return TrainCfg(
        max_iterations=1500,
        num_steps_per_env=8,
        spread_episode_ends=True,  # episodes end by time out
        policy=PolicyCfg(actor_hidden_dims=(128, 128), critic_hidden_dims=(128, 128), init_noise_std=0.5),
        algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
    )


register(
    "anymal-flat",
    env_cfg=anymal_flat_cfg,
    train_cfg=lambda: velocity_train_cfg((128, 128, 128), 300),
    play_cfg=velocity_play_cfg,
    result=LearningResult(metric="metrics/lin_vel_xy_error", threshold=0.2, budget_s=240.0, direction="<="),
    algos=off_policy_algos(v_min=-10.0, v_max=10.0, n_step=3),  # the support: docs/training.md
)
register(
    "anymal-rough",
    env_cfg=anymal_rough_cfg,
    train_cfg=lambda: velocity_train_cfg((512, 256, 128), 1500),
    play_cfg=velocity_play_cfg,
    result=LearningResult(metric="env/terrain_level", threshold=4.5, budget_s=320.0),
)
register(
    "anymal-nav",
    env_cfg=anymal_nav_cfg,
    train_cfg=nav_train_cfg,
    result=LearningResult(metric="metrics/goal_reached", threshold=0.9, budget_s=600.0),
)
