"""Cartpole balance with Isaac-Cartpole-Direct-v0 semantics."""

from __future__ import annotations

import dataclasses
import math

from phalanx import mdp, register
from phalanx.assets import asset
from phalanx.cfg import (
    ActionCfg,
    CameraCfg,
    EventTermCfg,
    LearningResult,
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


def cartpole_cfg() -> TaskCfg:
    """4 observations (pole angle, pole velocity, cart position, cart velocity), 1 action (cart
    force, 100 N per unit), 5 s episodes; ends when the cart leaves +-3 m or the pole passes 90 deg."""
    return TaskCfg(
        description="balance a pole on a cart (Isaac-Cartpole-Direct-v0)",
        model=asset("cartpole.xml"),
        episode_length_s=5.0,
        sim=SimCfg(decimation=2),
        actions=ActionCfg(actuators="slider", scale=100.0, clip=None),
        observations={
            "policy": {
                "pole_pos": ObsTermCfg(func=mdp.observations.joint_pos, params={"joints": "hinge"}),
                "pole_vel": ObsTermCfg(func=mdp.observations.joint_vel, params={"joints": "hinge"}),
                "cart_pos": ObsTermCfg(func=mdp.observations.joint_pos, params={"joints": "slider"}),
                "cart_vel": ObsTermCfg(func=mdp.observations.joint_vel, params={"joints": "slider"}),
            }
        },
        rewards={
            "alive": RewardTermCfg(func=mdp.rewards.is_alive, weight=1.0),
            "terminating": RewardTermCfg(func=mdp.rewards.is_terminated, weight=-2.0),
            "pole_pos": RewardTermCfg(func=mdp.rewards.joint_pos_l2, weight=-1.0, params={"joints": "hinge"}),
            "cart_vel": RewardTermCfg(func=mdp.rewards.joint_vel_l1, weight=-0.01, params={"joints": "slider"}),
            "pole_vel": RewardTermCfg(func=mdp.rewards.joint_vel_l1, weight=-0.005, params={"joints": "hinge"}),
        },
        terminations={
            "time_out": TerminationTermCfg(func=mdp.terminations.time_out, time_out=True),
            "cart_out_of_bounds": TerminationTermCfg(
                func=mdp.terminations.joint_pos_out_of_bounds, params={"joints": "slider", "bound": 3.0}
            ),
            "pole_fell": TerminationTermCfg(
                func=mdp.terminations.joint_angle_past, params={"joints": "hinge", "degrees": 90.0}
            ),
        },
        events={
            "reset_pole": EventTermCfg(
                func=mdp.events.reset_joints_by_offset,
                mode="reset",
                params={"joints": "hinge", "position_range": (-0.25 * math.pi, 0.25 * math.pi)},
            ),
        },
        reward_scale_by_dt=False,
        num_envs=4096,
        # A whole cartpole training takes seconds, so start-up decides the wait: without
        # torch.compile it starts seconds sooner, and whether compiling steps faster depends on
        # the host (docs/speed.md, "Defaults chosen by measurement");
        # `--env.compile-step` turns it on.
        compile_step=False,
    )


def cartpole_train_cfg() -> TrainCfg:
    """Small networks and a short rollout: solved in about 45 iterations on a CPU."""
    return TrainCfg(
        max_iterations=150,
        num_steps_per_env=16,
        policy=PolicyCfg(actor_hidden_dims=(32, 32), critic_hidden_dims=(32, 32)),
        algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
        # Like the env step, for start-up: compiled, the update is faster, but the first
        # iteration comes seconds later, warm or cold, and a cartpole is balanced after some 60
        # iterations. `--compile-update` turns it on. Networks this small gain nothing from
        # bfloat16 (docs/speed.md, "Defaults chosen by measurement").
        compile_update=False,
        bf16_update=False,
    )


def cartpole_camera_cfg(data_type: str) -> TaskCfg:
    """Cartpole seen through a camera (Isaac-Cartpole-RGB-Camera-Direct-v0 / -Depth- in spirit):
    the policy sees only 64x64 images, its last two frames stacked along the channels (one frame
    shows where the pole is, two how it moves); the critic sees the joint state. The camera looks
    along +y from 6 m away and sees the cart across +-3.4 m of its rail; it renders every env step
    (`--env.observations.image.rgb.params.every K`: every K-th)."""
    cfg = cartpole_cfg()
    isaac = {"rgb": "RGB", "depth": "Depth"}[data_type]
    state = cfg.observations["policy"]
    camera = {"camera": "eye", "width": 64, "height": 64, "data_type": data_type, "every": 1}
    depth = data_type == "depth"  # in metres / 8: the scene lies within 8 m of the camera
    params = camera | ({"far": 8.0} if depth else {})
    image = ObsTermCfg(func=mdp.observations.camera_image, params=params, scale=1 / 8 if depth else 1.0, history=2)
    return dataclasses.replace(
        cfg,
        description=f"balance a pole on a cart seen in {data_type} images (Isaac-Cartpole-{isaac}-Camera-Direct-v0)",
        cameras={"eye": CameraCfg(pos=(0.0, -6.0, 0.4), xyaxes=(1.0, 0.0, 0.0, 0.0, 0.0, 1.0), fovy=60.0)},
        observations={"policy": {}, "image": {data_type: image}, "critic": state},
    )


def cartpole_camera_train_cfg() -> TrainCfg:
    """A small convolutional encoder for 64x64 frames; the critic reads the joint state only."""
    cfg = cartpole_train_cfg()
    cfg.policy = PolicyCfg(
        actor_hidden_dims=(64,),
        critic_hidden_dims=(64, 64),
        image_group="image",
        cnn_channels=(16, 32, 32),
        cnn_features=128,
        critic_image=False,
    )
    cfg.algo = PPOCfg(learning_rate=5e-4, entropy_coef=0.005)
    cfg.max_iterations = 300
    # The update is most of an iteration here: compiled and in bfloat16 it is faster, for more
    # start-up (docs/speed.md, "Defaults chosen by measurement").
    cfg.compile_update = cfg.bf16_update = True
    return cfg


BALANCED = LearningResult(
    metric="mean_episode_length",
    threshold=285.0,  # 95 % of the 300-step episode: the pole stays up
    budget_s=40.0,
)
BALANCED_FROM_PIXELS = LearningResult(
    metric="mean_episode_length",
    threshold=285.0,
    budget_s=180.0,
)

register(
    "cartpole",
    env_cfg=cartpole_cfg,
    train_cfg=cartpole_train_cfg,
    result=BALANCED,
    algos=off_policy_algos(v_min=-100.0, v_max=100.0, num_atoms=101),  # the support: docs/training.md
)
register(
    "cartpole-rgb",
    env_cfg=lambda: cartpole_camera_cfg("rgb"),
    train_cfg=cartpole_camera_train_cfg,
    result=BALANCED_FROM_PIXELS,
)
register(
    "cartpole-depth",
    env_cfg=lambda: cartpole_camera_cfg("depth"),
    train_cfg=cartpole_camera_train_cfg,
    result=BALANCED_FROM_PIXELS,
)
