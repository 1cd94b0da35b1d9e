"""Why robots fall on the stepping stones under the quadruped controller's heuristic (zero
actions): every env walks forward at 0.5 m/s from the center of a tile of a fixed level (levels
spread over the envs), and at each fall the 0.3 s before the base began to tip (roll or pitch
past 0.25 rad) are searched for what went wrong first:

- edge: a standing foot stood within 4 cm of an edge (the ground around it differs by > 2 cm);
- late: a foot the gait had standing found no ground for 8 control steps (it reached into a
  hole or down to a lower stone).

It also measures the swinging feet mid-swing (30-70 % of the swing), over every step: how far
below their swing trajectory they run (the trajectory's point at the swing's progress, less the
foot's height), how high above the ground under them, and how often they touch it (within 2
cm: the controller's contact test).

    python tools/stones_falls.py [--num-envs 60] [--steps 500] [--blind] [--param NAME=VALUE ...] [--out F.json]

--blind: the high level does not look at the stones (no foothold search, the fixed swing lift).
--param: a quadruped controller param, as tools/stones_eval.py's (e.g. `swing_kp=3200`).
Prints, per cause, the falls of each level, and the mid-swing figures; --out writes them as JSON.
"""

from __future__ import annotations

import argparse
import json

import torch

from phalanx.control.swing import swing_trajectory
from phalanx.core.files import write_text_atomic
from phalanx.training.registry import env_cfg, make, play_env_cfg
from stones_eval import set_controller_params

TASK = "anymal-stones-qp"
WINDOW = 15  # env steps (0.3 s) before the tipping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--blind", action="store_true")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE: a controller param (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cfg = play_env_cfg(TASK, env_cfg(TASK))
    cfg.terrain_command = None
    cfg.commands["base_velocity"].params.update(
        lin_vel_x=(0.5, 0.5), lin_vel_y=(0.0, 0.0), ang_vel_z=(0.0, 0.0), heading=None, standing=0.0
    )
    if args.blind:
        cfg.actions.controller.params.update(foothold_reach=0.0, swing_clearance=0.0)
    set_controller_params(parser, cfg.actions.controller.params, args.param)
    env = make(cfg, num_envs=args.num_envs, device="cpu", seed=args.seed, verbose=False)
    levels = env.terrain.curriculum.num_levels
    level = torch.arange(env.num_envs) % levels
    env.terrain.curriculum.levels.copy_(level)
    env.reset()
    control, zeros = env.low_level, torch.zeros(env.num_envs, env.action_dim)
    history: list[dict[str, torch.Tensor]] = []
    alive = torch.ones(env.num_envs, dtype=torch.bool)
    falls: dict[str, list[int]] = {}
    sag, clearance, touching = [], [], []
    with torch.inference_mode():
        for _ in range(args.steps):
            robot, ground = control._state(env)
            clock = control.controller.clock
            stance, progress = clock.stance(), clock.swing_progress()
            asked = control._command(env, robot, ground, zeros)
            lift = asked.swing_height.clamp(min=0.0)
            target, _ = swing_trajectory(control.controller.liftoff, asked.footholds, progress, lift, 0.0)
            mid = ~stance & (progress > 0.3) & (progress < 0.7) & alive[:, None]
            sag.append((target[..., 2] - robot.feet[..., 2])[mid])
            clearance.append((robot.feet[..., 2] - ground)[mid])
            touching.append(robot.contact[mid])
            tilt = torch.maximum(robot.rotation[:, 2, 0].abs(), robot.rotation[:, 2, 1].abs())
            history.append({
                "edge": (stance & robot.contact & _on_edge(env, robot.feet[..., :2])).any(-1),
                "late": stance & ~robot.contact,
                "tilt": tilt,
            })  # fmt: skip
            history = history[-(WINDOW + 35) :]
            _, _, terminated, truncated, _ = env.step(zeros)
            for e in torch.nonzero(alive & terminated).flatten().tolist():
                tilt = torch.stack([h["tilt"][e] for h in history])
                tipped = torch.nonzero(tilt > 0.25).flatten()
                end = int(tipped[0]) if len(tipped) else len(history) - 1
                window = history[max(0, end - WINDOW) : end + 1]
                causes = ["edge"] if any(bool(h["edge"][e]) for h in window) else []
                late = torch.stack([h["late"][e] for h in window]).sum(0).max() >= 8
                causes += ["late"] if late else []
                key = "+".join(causes) or "none of these"
                falls.setdefault(key, [0] * levels)[int(level[e])] += 1
            alive &= ~(terminated | truncated)
    standing = [float(alive[level == k].float().mean()) for k in range(levels)]
    print(f"{TASK} heuristic{' (blind)' if args.blind else ''}, {env.num_envs} envs, {args.steps} steps:")
    print("falls per level, by what came first:")
    for key, row in sorted(falls.items()):
        print(f"  {key:20s} {row}")
    print("still walking at the end, per level:", [round(s, 2) for s in standing])
    sag, clearance = torch.cat(sag), torch.cat(clearance)
    below = {"mean": float(sag.mean()), "p50": float(sag.median()), "p90": float(sag.quantile(0.9))}
    above = {"p10": float(clearance.quantile(0.1)), "p50": float(clearance.median())}
    touch = float(torch.cat(touching).float().mean())
    print("mid-swing, the feet run below their swing trajectory by (m):", {k: round(v, 4) for k, v in below.items()})
    print("mid-swing, the feet are above the ground under them by (m):", {k: round(v, 4) for k, v in above.items()})
    print(f"mid-swing, the feet touch the ground in {touch:.3f} of their steps")
    if args.out:
        result = {"blind": args.blind, "num_envs": env.num_envs,
                  "steps": args.steps, "falls": falls, "walking": standing,
                  "sag_m": below, "clearance_m": above, "touching": touch}  # fmt: skip
        write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")


def _on_edge(env, xy: torch.Tensor, margin: float = 0.04) -> torch.Tensor:
    """(B, k) the ground within `margin` of each point (B, k, 2) differs by more than 2 cm."""
    offsets = torch.tensor([(margin, 0.0), (-margin, 0.0), (0.0, margin), (0.0, -margin), (0.0, 0.0)])
    heights = env.terrain.height_at(xy[..., None, :] + offsets)
    return heights.amax(-1) - heights.amin(-1) > 0.02


if __name__ == "__main__":
    main()
