"""Speed-up of the full-GPU pipeline over the same env with its force QP solved per env on the
CPU (Da and Xie report 10-1000x), and the QP's share of the captured env step. For a task whose
actions drive `quadruped_control`, with zero actions (the heuristic controller), after warm-up
steps, in one process, the time per env step of:

    captured    the default env: the step captured in a CUDA graph (and torch.compiled where the
                task says so), the QP batched on the GPU: the full-GPU pipeline;
    uncaptured  the same env built with capture=False, compile=False: what capture buys;
    host        uncaptured, each env's QP solved on the CPU with proxsuite at every control step
                (`qp_solver="host"`): a CPU-side controller. Slow: few steps.

The QP's share of `captured`: the env's own QP solve alone, on the problem of its last control
step, captured in a CUDA graph and replayed (its kernels eager: in the compiled env step they
fuse further, so this is an upper bound), times the control steps per env step, over the
captured env step. On a CPU device nothing is captured (captured is the default CPU env, the
same as uncaptured) and the QP is timed eagerly.

    python tools/qp_pipeline.py TASK [--num-envs 4096] [--steps 100] [--host-steps 3] [--out F.json]

--out writes a bench.json, whose table (`bench-table pipeline` in the docs, through `phalanx
bench docs`) has a row per task.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

import torch

from phalanx.bench.machine import tool_bench
from phalanx.bench.physics import captured_seconds, seconds_per_call
from phalanx.core.files import write_text_atomic
from phalanx.envs.task_env import TaskEnv
from phalanx.tasks.anymal.mdp.quadruped_control import quadruped_control
from phalanx.training.registry import env_cfg, make


def warmed_env(args: argparse.Namespace, warmup: int, qp_solver: str = "device", **flags) -> TaskEnv:
    """The task's env with its force QP solved by `qp_solver`, built with `flags` (capture,
    compile) and stepped `warmup` times with zero actions."""
    cfg = env_cfg(args.task)
    cfg.actions.controller.params["qp_solver"] = qp_solver
    env = make(cfg, num_envs=args.num_envs, device=args.device, seed=args.seed, **flags)
    zeros = torch.zeros(env.num_envs, env.action_dim, device=env.device)
    for _ in range(warmup):
        env.step(zeros)
    return env


def step_seconds(env: TaskEnv, steps: int) -> float:
    """Seconds per env step of zero actions over `steps` steps (synchronized at both ends)."""
    zeros = torch.zeros(env.num_envs, env.action_dim, device=env.device)
    return seconds_per_call(lambda: env.step(zeros), steps, env.device)


def qp_seconds(env: TaskEnv) -> float:
    """Seconds per solve of the env's force QP alone, on its last control step's problem (its
    warm start moves on: step the env no more)."""
    body = env.low_level.controller.body
    problem = body.last_problem

    def solve() -> None:
        body.qp.solve(*problem)

    if env.device.type == "cuda":
        return captured_seconds(solve, env.device)
    return seconds_per_call(solve, 10, env.device)


def free_memory() -> None:
    """Frees what the env just dropped held (its captured graph's memory too) before the next is built."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def timing(env: TaskEnv, seconds: float, steps: int) -> dict:
    """The JSON row of an env taking `seconds` per env step over `steps` steps."""
    return {
        "capture": env.capture,
        "compile": env.compile,
        "steps": steps,
        "ms_per_env_step": 1e3 * seconds,
        "env_steps_per_s": env.num_envs / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="a task whose actions drive quadruped_control (anymal-qp, anymal-stones-qp)")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=100, help="timed env steps of the captured and uncaptured env")
    parser.add_argument("--warmup", type=int, default=5, help="env steps before them (capture and compile happen here)")
    parser.add_argument("--host-steps", type=int, default=3, help="timed env steps of the host env (after one more)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results here as a bench.json")
    args = parser.parse_args()
    controller = env_cfg(args.task).actions.controller
    if controller is None or controller.func is not quadruped_control:
        parser.error(f"task {args.task!r}: its actions do not drive quadruped_control (env.actions.controller)")
    decimation = controller.decimation

    env = warmed_env(args, args.warmup)
    captured = timing(env, step_seconds(env, args.steps), args.steps)
    qp_s = qp_seconds(env)
    qp_iterations = env.low_level.controller.body.cfg.qp.iterations
    del env
    free_memory()
    env = warmed_env(args, args.warmup, capture=False, compile=False)
    uncaptured = timing(env, step_seconds(env, args.steps), args.steps)
    del env
    free_memory()
    env = warmed_env(args, 1, qp_solver="host", capture=False, compile=False)
    qp = env.low_level.controller.body.qp
    qp.host_seconds, qp.host_solves = 0.0, 0  # the timed steps only
    host = timing(env, step_seconds(env, args.host_steps), args.host_steps)
    host["per_qp_us"] = 1e6 * qp.host_seconds / qp.host_solves
    host["qp_share"] = qp.host_seconds / args.host_steps / (host["ms_per_env_step"] / 1e3)

    qp_ms = 1e3 * qp_s * decimation
    result = {
        "task": args.task,
        "num_envs": args.num_envs,
        "control_steps_per_env_step": decimation,
        "qp_iterations": qp_iterations,
        "captured": captured,
        "uncaptured": uncaptured,
        "host": host,
        "qp": {
            "ms_per_solve": 1e3 * qp_s,
            "ms_per_env_step": qp_ms,
            "share_of_captured": qp_ms / captured["ms_per_env_step"],
        },
        "speedup_captured_over_host": host["ms_per_env_step"] / captured["ms_per_env_step"],
        "speedup_uncaptured_over_host": host["ms_per_env_step"] / uncaptured["ms_per_env_step"],
    }
    print(f"{args.task}, {args.num_envs} envs on {args.device}, zero actions:")
    print("| env | capture | compile | QP | env steps/s | ms per env step |")
    print("|---|---|---|---|---|---|")
    for name in ("captured", "uncaptured", "host"):
        row, solver = result[name], "host" if name == "host" else "device"
        print(
            f"| {name} | {row['capture']} | {row['compile']} | {solver} | {row['env_steps_per_s']:,.0f} "
            f"| {row['ms_per_env_step']:.2f} |"
        )
    print(
        f"QP alone: {result['qp']['ms_per_solve']:.3f} ms per solve x {decimation} = {qp_ms:.3f} ms per env step, "
        f"{100 * result['qp']['share_of_captured']:.1f} % of the captured step"
    )
    print(f"host: {host['per_qp_us']:.1f} us per QP, {100 * host['qp_share']:.1f} % of its env step")
    print(
        f"speed-up over host: captured {result['speedup_captured_over_host']:.1f}x, "
        f"uncaptured {result['speedup_uncaptured_over_host']:.1f}x"
    )
    if args.out:
        bench = tool_bench("pipeline", args.task, "qp_pipeline.py", sys.argv[1:], args.device, results=[result])
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


if __name__ == "__main__":
    main()
