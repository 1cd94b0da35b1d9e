"""Success and distance per difficulty level on the stepping stones: every env walks forward at
`--speed` from the center of a tile of a fixed level (levels spread evenly over the envs, no
curriculum), in the task's play variant, for one episode. An env succeeds when it gets `--goal`
m from where it started (past the 1 m spawn platform and 2 m of stones) before falling; its
distance counts until it falls or the episode ends, at most the 4 m to its tile's edge.

    python tools/stones_eval.py TASK [--checkpoint P] [--label NAME] [--num-envs N] [--out DIR/bench.json]
        [--video FILE.mp4 --video-level K] [--body-controller qp|mpc] [--blind] [--param NAME=VALUE ...]

--out writes the results as a bench.json whose table (`bench-table stones` in the docs, through
`phalanx bench docs`) has a row per level and a column per policy, named by --label.

Without a checkpoint every action is zero: under anymal-stones-qp, the heuristic controller
(with `--body-controller mpc`, over the centroidal MPC). `--blind`: the quadruped controller's high
level does not look at the stones (no foothold search, the fixed swing lift). `--param NAME=VALUE`
(repeatable) sets one of the quadruped controller's params (`env.actions.controller.params`,
e.g. `swing_kp=1600`), of its default's type.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from phalanx.bench.machine import tool_bench
from phalanx.core.files import write_text_atomic
from phalanx.envs.mdp import state
from phalanx.envs.stored_cfg import env_cfg_from_data
from phalanx.sim.video import EnvRecorder
from phalanx.training.checkpoint import load_checkpoint
from phalanx.training.play import load_actor
from phalanx.training.registry import env_cfg, make, play_env_cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--checkpoint", default=None, help="a model_*.pt of the task; default: zero actions")
    parser.add_argument("--num-envs", type=int, default=4000)
    parser.add_argument("--speed", type=float, default=0.5, help="forward speed command (m/s)")
    parser.add_argument("--goal", type=float, default=3.0, help="distance from the start that counts as crossed (m)")
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: one episode's length)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the per-level results here, as a bench.json")
    parser.add_argument("--label", default=None, help="the policy's name in the table (default: its checkpoint)")
    parser.add_argument("--video", default=None, help="record env --video-level (it stands on that level) to this .mp4")
    parser.add_argument("--video-level", type=int, default=0)
    parser.add_argument("--body-controller", default=None, help="qp or mpc: the quadruped controller's body controller")
    parser.add_argument("--blind", action="store_true", help="no foothold search and the fixed swing lift")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE: a controller param (repeatable)")
    args = parser.parse_args()
    if args.video is not None and not args.video.endswith(".mp4"):
        parser.error(f"--video: must name an .mp4 file, got {args.video!r}")

    checkpoint = None if args.checkpoint is None else load_checkpoint(args.checkpoint, args.task)
    trained = (
        env_cfg(args.task) if checkpoint is None else env_cfg_from_data(checkpoint["config"]["env"], "--checkpoint")
    )
    cfg = play_env_cfg(args.task, trained)
    cfg.terrain_command = None  # levels stay where they are put
    if args.body_controller is not None:
        cfg.actions.controller.params["body_controller"] = args.body_controller
    if args.blind:
        cfg.actions.controller.params.update(foothold_reach=0.0, swing_clearance=0.0)
    set_controller_params(parser, cfg.actions.controller.params, args.param)
    cfg.commands["base_velocity"].params.update(
        lin_vel_x=(args.speed, args.speed), lin_vel_y=(0.0, 0.0), ang_vel_z=(0.0, 0.0), heading=None, standing=0.0
    )
    env = make(cfg, num_envs=args.num_envs, device=args.device, seed=args.seed, verbose=False)
    levels = env.terrain.curriculum.num_levels
    if args.video is not None and not 0 <= args.video_level < min(levels, env.num_envs):
        parser.error(f"--video-level: must be a level in [0, {min(levels, env.num_envs) - 1}], got {args.video_level}")
    recorder = None if args.video is None else EnvRecorder(env.sim, env_id=args.video_level)  # env k: level k
    env.terrain.curriculum.levels.copy_(torch.arange(env.num_envs, device=env.device) % levels)
    obs = env.reset()
    if checkpoint is None:
        zeros = torch.zeros(env.num_envs, env.action_dim, device=env.device)
        act = lambda obs: zeros  # noqa: E731
    else:
        act = load_actor(checkpoint, env)

    start = state.root_pos_w(env)[:, :2].clone()
    alive = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
    fell = torch.zeros_like(alive)
    distance = torch.zeros(env.num_envs, device=env.device)
    with torch.inference_mode():
        for _ in range(args.steps or env.max_episode_length):
            if recorder is not None:
                recorder.capture()
            xy_before = state.root_pos_w(env)[:, :2].clone()
            obs, _, terminated, truncated, _ = env.step(act(obs))
            # The step's last pose before a reset: where a falling robot ended (its base at most a step off).
            walked = (xy_before - start).norm(dim=1).clamp(max=4.0)
            distance = torch.where(alive, torch.maximum(distance, walked), distance)
            fell |= alive & terminated
            alive &= ~(terminated | truncated)
    level = torch.arange(env.num_envs, device=env.device) % levels
    crossed = distance >= args.goal
    rows = []
    for k in range(levels):
        mine = level == k
        rows.append({
            "level": k,
            "envs": int(mine.sum()),
            "success": float(crossed[mine].float().mean()),
            "distance_m": float(distance[mine].mean()),
            "fell": float(fell[mine].float().mean()),
        })  # fmt: skip
    who = "zero actions" if checkpoint is None else args.checkpoint
    print(f"{args.task} ({who}), {args.speed} m/s, goal {args.goal} m, {env.num_envs} envs:")
    print("| level | envs | success | distance (m) | fell |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['level']} | {r['envs']} | {r['success']:.2f} | {r['distance_m']:.2f} | {r['fell']:.2f} |")
    if recorder is not None:
        print(f"video of level {args.video_level}: {recorder.write(args.video, fps=1.0 / env.step_dt)}")
    if args.out:
        label = args.label or who
        config = {
            "policy": who,
            "speed": args.speed,
            "goal": args.goal,
            "body_controller": args.body_controller,
            "blind": args.blind,
            "params": args.param,
        }
        results = [row | {"policy": label} for row in rows]
        bench = tool_bench(
            "stones", args.task, "stones_eval.py", sys.argv[1:], str(env.device), config=config, results=results
        )
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


def set_controller_params(parser: argparse.ArgumentParser, params: dict, items: list[str]) -> None:
    """`--param NAME=VALUE` items into the controller's `params`, each of its default's type; a
    name it lacks or a value of another type ends the tool with `parser.error` (one line, exit 2)."""
    for item in items:
        name, _, value = item.partition("=")
        if name not in params or not value:
            parser.error(f"--param: must be NAME=VALUE with NAME one of {', '.join(sorted(params))}, got {item!r}")
        try:
            params[name] = _value(value, params[name])
        except ValueError:
            parser.error(
                f"--param: {name} must be of its default's type ({type(params[name]).__name__}), got {value!r}"
            )


def _value(text: str, default: object) -> object:
    """A param's value as given on the command line, of its default's type (True/False for a
    bool); ValueError when it is not one."""
    if isinstance(default, bool):
        if text not in ("True", "False"):
            raise ValueError(text)
        return text == "True"
    return type(default)(text)


if __name__ == "__main__":
    main()
