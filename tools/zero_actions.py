"""Plays a task with every action zero, as `phalanx play` plays a policy (the task's play variant,
deterministic), and reports the episodes' returns and metrics: for tasks whose actions correct a
controller (anymal-qp), the controller alone, the baseline a policy is compared with.

    python tools/zero_actions.py TASK [--num-envs N] [--steps S] [--device D] [--seed K]
        [--body-controller qp|mpc]

--body-controller mpc: a task over the quadruped controller with the MPC's forces (the heuristic
over the centroidal MPC, the baseline of issue #60).
"""

from __future__ import annotations

import argparse

import torch

from phalanx.training.play import run_episodes
from phalanx.training.registry import env_cfg, make, play_env_cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: one episode's length)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--body-controller", default=None, help="qp or mpc: the quadruped controller's body controller")
    args = parser.parse_args()
    cfg = play_env_cfg(args.task, env_cfg(args.task))
    if args.body_controller is not None:
        cfg.actions.controller.params["body_controller"] = args.body_controller
    env = make(cfg, num_envs=args.num_envs, device=args.device, seed=args.seed, verbose=False)
    zeros = torch.zeros(env.num_envs, env.action_dim, device=env.device)
    steps = args.steps or env.max_episode_length
    episodes = run_episodes(env, lambda obs: zeros, steps)
    print(
        f"{args.task}, zero actions: {len(episodes.returns)} episodes in {steps} steps x {env.num_envs} envs: "
        f"{episodes.summary()}"
    )


if __name__ == "__main__":
    main()
