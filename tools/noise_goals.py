"""How many goals a shadow-cube policy reaches in a fixed time, acting on its mean plus a
multiple of its own exploration noise: how much of its teacher a student keeps, with and without
the noise it trains under.

    python tools/noise_goals.py CHECKPOINT [CHECKPOINT ...] [--envs 64] [--steps 1800]
        [--std-scale 0 0.5 1] [--mean-clamp K] [--corner-noise M] [--device cpu|cuda]

CHECKPOINT: a model_*.pt, or its run directory, of shadow-cube, shadow-cube-vision or
shadow-cube-corners (tools/shadow_corners_probe.py's teacher, registered here as there).
`--mean-clamp K` clamps the mean to env.actions.clip plus K of the policy's standard deviations
before the noise: K = 0 acts as a student that learned its teacher's clamped actions perfectly.
`--corner-noise M` adds uniform noise in [-M, M] to each of the corners teacher's corner
coordinates (10 per m) at every step: a stand-in for an imprecise perception. For each checkpoint
and std scale, one JSON line: the goals reached per env over the steps (in the episodes that
ended and in those still running), the ended episodes' count and mean, and the shares of the
policy's mean actions past env.actions.clip and past it by more than one standard deviation.
The same envs (seed 1) and noise (seed 3) for every policy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import torch

from phalanx.core.devices import resolve_device
from phalanx.envs.task_env import TaskEnv
from phalanx.tasks.shadow_hand.cube import shadow_cube_train_cfg
from phalanx.training.checkpoint import PLAY_KEYS, load_checkpoint
from phalanx.training.play import played, run_episodes
from phalanx.training.registry import register
from phalanx.training.run_paths import checkpoint_file
from shadow_corners_probe import corners_cfg


def goals(checkpoint: str, args: argparse.Namespace, std_scale: float) -> dict:
    """One line of the tool's output: `checkpoint`'s goals per env under `std_scale` x its noise."""
    path = checkpoint_file(checkpoint, "")
    task = load_checkpoint(path, None, PLAY_KEYS)["config"]["task"]
    run = played(task, path, None)
    if args.corner_noise:
        policy = run.env_cfg.observations["policy"]
        policy["cube_keypoints"] = dataclasses.replace(policy["cube_keypoints"], noise=args.corner_noise)
    env = TaskEnv(run.env_cfg, args.envs, resolve_device(args.device), seed=1, verbose=False)
    mean_of, _ = run.actor(env, 1)
    clip, own_std = env.cfg.actions.clip, run.state["policy"]["log_std"].to(env.device).exp()
    bound = None if args.mean_clamp is None else clip + args.mean_clamp * own_std
    noise = torch.Generator(env.device).manual_seed(3)
    past = torch.zeros(2, device=env.device)

    def act(obs: dict[str, torch.Tensor]) -> torch.Tensor:
        mean = mean_of(obs)
        past.add_(torch.stack([(mean.abs() > clip).float().mean(), (mean.abs() > clip + own_std).float().mean()]))
        mean = mean if bound is None else mean.clamp(-bound, bound)
        return mean + std_scale * own_std * torch.randn(mean.shape, generator=noise, device=env.device)

    start = time.time()
    with torch.no_grad():
        episodes = run_episodes(env, act, args.steps)
    ended, running = episodes.metrics["consecutive_successes"], episodes.running.metrics["consecutive_successes"]
    return {
        "task": task,
        "checkpoint": checkpoint,
        "std_scale": std_scale,
        "mean_clamp": args.mean_clamp,
        "corner_noise": args.corner_noise,
        "device": args.device,
        "envs": args.envs,
        "steps": args.steps,
        "goals_per_env": (sum(ended) + sum(running)) / args.envs,
        "ended": len(ended),
        "ended_mean": sum(ended) / len(ended) if ended else None,
        "mean_past_clip": (past / args.steps).tolist(),
        "seconds": round(time.time() - start),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1800)
    parser.add_argument("--std-scale", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    parser.add_argument("--mean-clamp", type=float, default=None)
    parser.add_argument("--corner-noise", type=float, default=0.0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    register("shadow-cube-corners", env_cfg=corners_cfg, train_cfg=shadow_cube_train_cfg)
    torch.set_num_threads(1)
    for checkpoint in args.checkpoints:
        for scale in args.std_scale:
            print(json.dumps(goals(checkpoint, args, scale)), flush=True)


if __name__ == "__main__":
    main()
