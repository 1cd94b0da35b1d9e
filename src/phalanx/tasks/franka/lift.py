"""The Franka-like arm grasps a cube on its table and lifts it to a commanded position
(phalanx/assets/franka_lift.xml; Isaac-Lift-Cube-Franka-v0 in spirit)."""

from __future__ import annotations

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import (
    CommandTermCfg,
    CurriculumTermCfg,
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
from phalanx.tasks.franka.mdp import lift
from phalanx.tasks.franka.reach import ARM, BASE, EE, arm_actuators, arm_and_gripper_actions

CUBE = "cube"
LIFTED = 0.04
"""The cube's center above the table (m) that counts as lifted: 1.5 cm off it."""


def franka_lift_cfg() -> TaskCfg:
    """Grasp the 5 cm cube, placed at random in front of the robot, and hold it at a position drawn
    per episode. Actions: joint-position targets around the home pose (0.5 rad per unit,
    `arm_targets`) and the gripper, open or closed by the sign of the last action. The policy sees
    the joints, the cube's position, the goal and the offset from the cube to it in the robot's
    frame, and its last action. Rewards and their curriculum are Isaac Lab's (reach the cube, lift
    it, bring it to the goal; action rate and joint velocities penalized, more after 10,000 env
    steps). 5 s episodes at 50 Hz on 5 ms physics steps (grasps need them); an episode ends early
    when the cube leaves the table. `success`: the cube within 5 cm of the goal at an episode's end."""
    cube = {"site": CUBE}
    goal = cube | {"command": "object_pose"}
    return TaskCfg(
        description="a 7-DoF arm grasps a cube and lifts it to a commanded position (Isaac-Lift-Cube-Franka-v0)",
        model=asset("franka_lift.xml"),
        episode_length_s=5.0,
        # Buffers from measurement: a grasp of the cube holds 12 contacts and 49 constraint rows
        # (the bound from the model's geom pairs is 124 and 512).
        sim=SimCfg(dt=0.005, decimation=4, nconmax_per_env=32, njmax_per_env=128),
        actuators=arm_actuators(kp=80.0, kd=4.0),
        actions=arm_and_gripper_actions(scale=0.5),
        observations={
            "policy": {
                "joint_pos": ObsTermCfg(func=mdp.observations.joint_pos_rel),
                "joint_vel": ObsTermCfg(func=mdp.observations.joint_vel),
                "object_position": ObsTermCfg(func=mdp.bodies.site_pos_b, params={"sites": [CUBE], "base": BASE}),
                "target_position": ObsTermCfg(
                    func=mdp.observations.generated_commands, params={"command": "object_pose"}
                ),
                "object_to_target": ObsTermCfg(func=mdp.end_effector.site_position_error_b, params=goal),
                "actions": ObsTermCfg(func=mdp.observations.last_action),
            }
        },
        commands={
            "object_pose": CommandTermCfg(
                func=mdp.end_effector.uniform_pose,
                resampling_time_range_s=(5.0, 5.0),
                params={"base": BASE, "pos_x": (0.4, 0.6), "pos_y": (-0.25, 0.25), "pos_z": (0.25, 0.5)},
            ),
        },
        rewards={
            "reaching_object": RewardTermCfg(
                func=mdp.bodies.site_distance_tanh, weight=1.0, params={"site": EE, "to_site": CUBE, "std": 0.1}
            ),
            "lifting_object": RewardTermCfg(
                func=lift.site_lifted, weight=15.0, params=cube | {"minimal_height": LIFTED}
            ),
            "object_goal_tracking": RewardTermCfg(
                func=lift.lifted_site_goal_tanh, weight=16.0, params=goal | {"minimal_height": LIFTED, "std": 0.3}
            ),
            "object_goal_tracking_fine": RewardTermCfg(
                func=lift.lifted_site_goal_tanh, weight=5.0, params=goal | {"minimal_height": LIFTED, "std": 0.05}
            ),
            "action_rate": RewardTermCfg(func=mdp.velocity_rewards.action_rate_l2, weight=-1e-4),
            "joint_vel": RewardTermCfg(func=mdp.rewards.joint_vel_l2, weight=-1e-4, params={"joints": ARM}),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True),
            # Off a 0.9 m x 1 m table in front of the robot (the scene's plane has no edge).
            "object_off_table": TerminationTermCfg(
                func=mdp.terminations.site_outside,
                params={"site": CUBE, "low": (0.1, -0.5, 0.0), "high": (1.0, 0.5, 2.0)},
            ),
        },
        curriculum={
            # Once the task is learned the arm must move smoothly: action rate and joint
            # velocities weigh 1000 times more from 10,000 env steps (about 400 iterations) on.
            name: CurriculumTermCfg(
                func=mdp.curriculum.reward_weight, params={"reward": name, "weight": -1e-1, "num_steps": 10_000}
            )
            for name in ("action_rate", "joint_vel")
        },
        metrics={
            "ee_object_distance": MetricTermCfg(func=mdp.bodies.site_distance, params={"site": EE, "to_site": CUBE}),
            "lifted": MetricTermCfg(func=lift.site_lifted, params=cube | {"minimal_height": LIFTED}, final=True),
            "goal_distance": MetricTermCfg(func=mdp.end_effector.site_position_error, params=goal, final=True),
            "success": MetricTermCfg(func=lift.site_at_goal, params=goal | {"tolerance": 0.05}, final=True),
        },
        events={
            # The cube is the model's only free joint: the env's root.
            "reset_cube": EventTermCfg(
                func=mdp.events.reset_root_state_uniform,
                mode="reset",
                params={"xy_range": (-0.1, 0.1), "y_range": (-0.25, 0.25)},
            ),
        },
        num_envs=4096,
    )


def franka_lift_train_cfg() -> TrainCfg:
    """rsl_rl's LiftCubePPORunnerCfg (256-128-64 ELU networks, 24-step rollouts, gamma 0.98), with
    observations normalized by running statistics (rsl_rl's empirical normalization, off in
    Isaac Lab's config): the cube's and the goal's positions vary by centimeters beside joint
    velocities of rad/s, and unscaled the policy is slow to find the grasp."""
    return TrainCfg(
        max_iterations=1500,
        num_steps_per_env=24,
        empirical_normalization=True,
        policy=PolicyCfg(actor_hidden_dims=(256, 128, 64), critic_hidden_dims=(256, 128, 64)),
        algo=PPOCfg(learning_rate=1e-4, entropy_coef=0.006, gamma=0.98, lam=0.95, desired_kl=0.01),
    )


register(
    "franka-lift",
    env_cfg=franka_lift_cfg,
    train_cfg=franka_lift_train_cfg,
    result=LearningResult(metric="metrics/success", threshold=0.9, budget_s=750.0),
)
