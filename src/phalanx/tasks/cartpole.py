"""Cartpole balance with Isaac-Cartpole-Direct-v0 semantics."""

from __future__ import annotations

import math

from phalanx.assets import asset_path
from phalanx.envs.cfg import ActionCfg, EventTermCfg, ObsTermCfg, RewardTermCfg, TaskCfg, TerminationTermCfg
from phalanx.envs.mdp import events, observations, rewards, terminations
from phalanx.registry import register
from phalanx.rl.config import PolicyCfg, TrainCfg
from phalanx.rl.ppo import PPOCfg
from phalanx.sim.cfg import SimCfg


def cartpole_cfg() -> TaskCfg:
    """4 observations (pole angle, pole velocity, cart position, cart velocity), 1 action (cart
    force, 100 N per unit), 5 s episodes; ends when the cart leaves +-3 m or the pole passes 90 deg."""
    return TaskCfg(
        description="balance a pole on a cart (Isaac-Cartpole-Direct-v0)",
        model=asset_path("cartpole.xml"),
        episode_length_s=5.0,
        sim=SimCfg(decimation=2),
        actions=ActionCfg(actuators="slider", scale=100.0, clip=None),
        observations={
            "policy": {
                "pole_pos": ObsTermCfg(func=observations.joint_pos, params={"joints": "hinge"}),
                "pole_vel": ObsTermCfg(func=observations.joint_vel, params={"joints": "hinge"}),
                "cart_pos": ObsTermCfg(func=observations.joint_pos, params={"joints": "slider"}),
                "cart_vel": ObsTermCfg(func=observations.joint_vel, params={"joints": "slider"}),
            }
        },
        rewards={
            "alive": RewardTermCfg(func=rewards.is_alive, weight=1.0),
            "terminating": RewardTermCfg(func=rewards.is_terminated, weight=-2.0),
            "pole_pos": RewardTermCfg(func=rewards.joint_pos_l2, weight=-1.0, params={"joints": "hinge"}),
            "cart_vel": RewardTermCfg(func=rewards.joint_vel_l1, weight=-0.01, params={"joints": "slider"}),
            "pole_vel": RewardTermCfg(func=rewards.joint_vel_l1, weight=-0.005, params={"joints": "hinge"}),
        },
        terminations={
            "time_out": TerminationTermCfg(func=terminations.time_out, time_out=True),
            "cart_out_of_bounds": TerminationTermCfg(
                func=terminations.joint_pos_out_of_bounds, params={"joints": "slider", "bound": 3.0}
            ),
            "pole_fell": TerminationTermCfg(
                func=terminations.joint_angle_past, params={"joints": "hinge", "degrees": 90.0}
            ),
        },
        events={
            "reset_pole": EventTermCfg(
                func=events.reset_joints_by_offset,
                mode="reset",
                params={"joints": "hinge", "position_range": (-0.25 * math.pi, 0.25 * math.pi)},
            ),
        },
        reward_scale_by_dt=False,
        num_envs=4096,
        # A whole cartpole training takes seconds, so start-up decides the wait: without
        # torch.compile it starts 3-4 s sooner warm (about 20 s cold). Throughput depends on the
        # host: on two H100s eager stepped at 5.1-5.2 M env steps/s, compiled at 4.3 M on one and
        # 7.2 M on the other (docs/benchmarks.md); `--env.compile-step` turns it on.
        compile_step=False,
    )


def cartpole_train_cfg() -> TrainCfg:
    """Small networks and a short rollout: solved in about 45 iterations on a CPU."""
    return TrainCfg(
        max_iterations=150,
        num_steps_per_env=16,
        cpu_num_envs=256,
        policy=PolicyCfg(actor_hidden_dims=(32, 32), critic_hidden_dims=(32, 32)),
        algo=PPOCfg(learning_rate=1e-3, entropy_coef=0.005),
        # Like the env step, for start-up: compiled, the update takes 5.7 instead of 10.0 ms
        # (fps_total 3.1 instead of 2.5 M on an H100), but the first iteration comes 3.6 s later,
        # warm or cold, and a cartpole is balanced after some 60 iterations. `--compile-update`
        # turns it on. Networks this small gain nothing from bfloat16 (10.3 ms).
        compile_update=False,
        bf16_update=False,
    )


register("cartpole", env_cfg=cartpole_cfg, train_cfg=cartpole_train_cfg)
