"""In-hand cube reorientation with a 24-DoF Shadow-like hand (Isaac-Repose-Cube-Shadow-Direct-v0 in
spirit): turn the cube on the palm to a goal orientation, a new goal each time it gets there."""

from __future__ import annotations

import dataclasses

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import (
    ActionCfg,
    CameraCfg,
    CommandTermCfg,
    EventTermCfg,
    LearningResult,
    MetricTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    SimCfg,
    TaskCfg,
    TerminationTermCfg,
    TrainCfg,
    off_policy_algos,
)
from phalanx.rl.cfg import DistillCfg, PolicyCfg, PPOCfg
from phalanx.tasks.shadow_hand.mdp import manipulation

CUBE_HOME = (0.0077, 0.0005, 0.3396)
"""Where the cube rests on the palm in the hand's default pose (the model's "home" keyframe): the
position it should keep while it turns."""
CUBE_HALF_SIZE = 0.0325
FINGERTIPS = ["fftip", "mftip", "rftip", "lftip", "thtip"]
DISTAL = ["ffdistal", "mfdistal", "rfdistal", "lfdistal", "thdistal"]


GOAL_TIME_S = 8.0
"""Each goal must be reached within this time of being set (OpenAI's and Isaac Lab's OpenAI variant)."""
MAX_SUCCESSES = 50
"""An episode is won, and ends, at this many goals in a row."""


def shadow_cube_cfg() -> TaskCfg:
    """20 actions spanning the actuators' ranges (60 Hz). The policy sees the hand's joints, the
    cube's position and orientation, the goal, the rotation from the goal to the cube, the
    fingertips and its last action; the critic also sees the velocities and the fingertips'
    contact forces. The cube's orientations are rotation matrices, not quaternions: the
    simulation's quaternion takes either sign (q and -q turn alike; its history picks one), and a
    policy acting on it acts differently on the two, which a pixel student of it cannot see.
    Rewards (Isaac Lab's weights): -10 x the cube's distance from its place, 1 / (rotation error +
    0.1), 250 per goal reached (within 0.1 rad), -0.0002 x |action|^2. The episode ends when the
    cube falls (24 cm from its place), when a goal is not reached within 8 s, or at the 50th goal
    in a row (OpenAI's rules, which Isaac Gym's and OpenAI's "20 consecutive successes" count
    under; Isaac Lab's Shadow task has 10 s episodes)."""
    target = {"target": CUBE_HOME}
    goal = {"command": "goal"}
    critic_extra = {
        "joint_vel": ObsTermCfg(func=mdp.observations.joint_vel, scale=0.2),
        "cube_lin_vel": ObsTermCfg(func=mdp.observations.root_lin_vel_b),
        "cube_ang_vel": ObsTermCfg(func=mdp.observations.root_ang_vel_b, scale=0.2),
        "fingertip_forces": ObsTermCfg(func=mdp.bodies.body_contact_force_w, params={"bodies": DISTAL}, scale=0.1),
    }
    policy = {
        "joint_pos": ObsTermCfg(func=mdp.observations.joint_pos_limit_normalized),
        "cube_pos": ObsTermCfg(func=manipulation.object_pos_rel, params=target),
        "cube_rotation": ObsTermCfg(func=manipulation.object_rotation),
        "goal_quat": ObsTermCfg(func=mdp.observations.generated_commands, params=goal),
        "cube_to_goal_rotation": ObsTermCfg(func=manipulation.object_goal_rotation, params=goal),
        "fingertip_pos": ObsTermCfg(func=mdp.bodies.site_pos_w, params={"sites": FINGERTIPS}),
        "actions": ObsTermCfg(func=mdp.observations.last_action),
    }
    return TaskCfg(
        description=(
            "turn a cube in a 24-DoF hand to goal orientations, 8 s per goal (Isaac-Repose-Cube-Shadow-Direct-v0)"
        ),
        model=asset("shadow_hand.xml"),
        episode_length_s=GOAL_TIME_S * MAX_SUCCESSES,  # never reached: a goal times out first
        # Buffers from measurement, with 3x margin: 32 envs x 1200 steps used at most 22 contacts and
        # 92 constraint rows per env under random actions, 18 and 79 under a trained policy (MuJoCo's
        # bounds: 420 and 1728). A world that overflows is reset and counted.
        sim=SimCfg(decimation=2, body_forces=True, nconmax_per_env=64, njmax_per_env=256),
        actions=ActionCfg(actuators=".*", ctrl_range=True),
        observations={"policy": policy, "critic": policy | critic_extra},
        commands={
            # New goals come on success and at reset only: the timer lies beyond any episode.
            "goal": CommandTermCfg(
                func=manipulation.goal_orientation,
                resampling_time_range_s=(1e9, 1e9),
                params={"success_tolerance": 0.1},
            ),
        },
        rewards={
            "cube_distance": RewardTermCfg(func=manipulation.object_distance, weight=-10.0, params=target),
            "rotation": RewardTermCfg(func=manipulation.object_rotation_alignment, weight=1.0, params=goal),
            "goal_reached": RewardTermCfg(func=manipulation.object_goal_reached, weight=250.0, params=goal),
            "action_l2": RewardTermCfg(func=mdp.rewards.action_l2, weight=-0.0002),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True),
            "goal_time_out": TerminationTermCfg(
                func=manipulation.goal_time_out, params=goal | {"time_s": GOAL_TIME_S}, time_out=True
            ),
            "won": TerminationTermCfg(
                func=manipulation.successes_reached, params=goal | {"count": MAX_SUCCESSES}, time_out=True
            ),
            "cube_fell": TerminationTermCfg(func=manipulation.object_dropped, params=target | {"distance": 0.24}),
        },
        metrics={
            "consecutive_successes": MetricTermCfg(func=manipulation.consecutive_successes, params=goal, final=True),
            "rotation_error": MetricTermCfg(func=manipulation.object_rotation_error, params=goal),
        },
        events={
            "reset_hand": EventTermCfg(
                func=mdp.events.reset_joints_by_offset, mode="reset", params={"position_range": (-0.2, 0.2)}
            ),
            "reset_cube": EventTermCfg(
                func=mdp.events.reset_root_state_uniform,
                mode="reset",
                params={"xy_range": (-0.01, 0.01), "yaw_range": (-3.1416, 3.1416)},
            ),
        },
        reward_scale_by_dt=False,
        num_envs=8192,
        cpu_num_envs=64,
    )


def shadow_cube_train_cfg() -> TrainCfg:
    """Isaac Lab's rl_games settings for the Shadow hand in spirit: 512-512-256-128 ELU networks,
    16-step rollouts, observation normalization, an adaptive learning rate."""
    return TrainCfg(
        max_iterations=5000,
        num_steps_per_env=16,
        empirical_normalization=True,
        policy=PolicyCfg(actor_hidden_dims=(512, 512, 256, 128), critic_hidden_dims=(512, 512, 256, 128)),
        algo=PPOCfg(learning_rate=5e-4, entropy_coef=0.0, num_mini_batches=4, gamma=0.99, lam=0.95),
    )


def shadow_cube_vision_cfg() -> TaskCfg:
    """shadow-cube seen by a camera 28 cm above the palm: the policy sees the hand's own state
    (joints, fingertips, last action), the goal (as a quaternion and as the corners of a cube
    turned to it) and 64x64 images of RGB, depth and the cube's segmentation (rendered at once, 5
    channels; every env step, `--env.observations.image.eye.params.every K`: every K-th), not the
    cube's pose; the critic sees the whole state; "keypoints" holds the cube's corners, which the
    policy's encoder learns to predict. 64x64: the cube spans about 20 pixels, enough to tell its
    faces and their dots apart. The goal's corners are in the predicted corners' units, so the
    actor compares points with points (as Isaac Lab's vision variant does)."""
    cfg = shadow_cube_cfg()
    own = ("joint_pos", "goal_quat", "fingertip_pos", "actions")
    keypoints = {"target": CUBE_HOME, "half_size": CUBE_HALF_SIZE}
    goal_corners = ObsTermCfg(
        func=manipulation.goal_keypoints, params={"half_size": CUBE_HALF_SIZE, "command": "goal"}, scale=10.0
    )
    camera = {"camera": "eye", "width": 64, "height": 64, "far": 1.0, "every": 1}
    image = ObsTermCfg(
        func=mdp.observations.camera_image,
        params=camera | {"data_type": ["rgb", "depth", "segmentation"], "classes": {"cube": "cube.*"}},
    )
    return dataclasses.replace(
        cfg,
        description="shadow-cube seen by a camera (Isaac-Repose-Cube-Shadow-Vision-Direct-v0)",
        cameras={"eye": CameraCfg(pos=(0.008, 0.02, 0.62), fovy=40.0)},
        observations={
            "policy": {name: term for name, term in cfg.observations["policy"].items() if name in own}
            | {"goal_keypoints": goal_corners},
            "image": {"eye": image},
            "critic": cfg.observations["critic"],
            "keypoints": {"cube": ObsTermCfg(func=manipulation.object_keypoints, params=keypoints, scale=10.0)},
        },
        num_envs=2048,
    )


def shadow_cube_vision_train_cfg() -> TrainCfg:
    """shadow-cube's settings with a convolutional encoder for the actor (the default CNN,
    32-64-64 channels and 256 features: at equal gradient steps it learned faster than 16-32-32
    and 128, for a little more update time, docs/benchmarks.md); the critic reads the state. The
    task learns as the student of a trained shadow-cube policy (`--teacher`, its declared result):
    its actor reads the CNN's features, so that the imitation loss trains the encoder end to end,
    and it imitates for its whole run. Its keypoint head
    (`--policy.image-targets keypoints`, Isaac Lab's vision variant: the actor reads the cube's
    corners predicted from the images) learns from PPO alone, and has not turned the cube."""
    cfg = shadow_cube_train_cfg()
    cfg.policy = dataclasses.replace(
        cfg.policy,
        image_group="image",
        critic_image=False,
    )
    cfg.distill = DistillCfg(iterations=cfg.max_iterations)
    return cfg


register(
    "shadow-cube",
    env_cfg=shadow_cube_cfg,
    train_cfg=shadow_cube_train_cfg,
    result=LearningResult(metric="metrics/consecutive_successes", threshold=20.0, budget_s=1200.0),
    algos=off_policy_algos(v_min=-500.0, v_max=500.0),  # the support: docs/training.md
)
register(
    "shadow-cube-vision",
    env_cfg=shadow_cube_vision_cfg,
    train_cfg=shadow_cube_vision_train_cfg,
    # The suite's teacher is its shadow-cube run, stopped at that task's 20: a student that follows
    # it closely ends a little below it.
    result=LearningResult(
        metric="metrics/consecutive_successes", threshold=15.0, budget_s=1200.0, teacher="shadow-cube"
    ),
)
