"""How many kernels one training iteration launches, by phase (issue #62): what a GPU's fixed
per-iteration cost is made of when its envs are too few to fill it.

    python tools/kernel_counts.py TASK [--num-envs N] [--device cpu|cuda] [TRAIN FLAGS ...]

Trains TASK for two iterations (compiling what the task compiles), then counts, over a third,
uncaptured: Warp's kernel launches (the physics and Warp's own kernels of phalanx: `wp.launch`
calls) and torch's (the profiler's aten ops that compute and call no other op that does: views,
allocations and metadata left out), inside the trainer's phases: each env step (physics and
observations, rewards, resets), the rest of the rollout (the policy's inference, the records,
the returns) and the PPO update. The counts are the CPU's: a GPU runs some ops as fewer kernels
(a linear layer's product and bias as one, torch's multi-tensor norms and Adam as one each) and
the physics solver's iterations as a conditional loop in its graph: they bound a GPU's count
from above.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

import warp as wp
from rich.console import Console
from torch.profiler import ProfilerActivity, profile

NOT_KERNELS = {
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::slice", "aten::select", "aten::as_strided",
    "aten::expand", "aten::t", "aten::transpose", "aten::unsqueeze", "aten::squeeze", "aten::detach",
    "aten::detach_", "aten::alias", "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resize_",
    "aten::lift_fresh", "aten::set_", "aten::unbind", "aten::split", "aten::split_with_sizes", "aten::chunk",
    "aten::narrow", "aten::permute", "aten::view_as", "aten::expand_as", "aten::flatten", "aten::unflatten",
    "aten::item", "aten::_local_scalar_dense", "aten::result_type", "aten::is_nonzero", "aten::numpy_T",
    "aten::_reshape_alias", "aten::contiguous", "aten::to", "aten::_to_copy", "aten::size", "aten::stride",
    "aten::resolve_conj", "aten::resolve_neg", "aten::_conj", "aten::conj", "aten::new_empty",
    "aten::new_empty_strided",
}  # fmt: skip
"""Ops that compute nothing on a device (views, metadata, allocations); aten::to of a tensor
already there is none either, and its real copies show as aten::copy_; resolving the conjugate of
a real tensor is none."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", help="write the counts here as JSON")
    args, train_flags = parser.parse_known_args()

    from phalanx.flags import parse_flags
    from phalanx.training.cfg import TrainCfg
    from phalanx.training.registry import make, train_cfg
    from phalanx.training.trainer import Trainer

    cfg = parse_flags(TrainCfg, train_cfg(args.task), train_flags, f"kernel_counts {args.task}")
    cfg.num_envs, cfg.device, cfg.capture_rollout, cfg.capture_update = args.num_envs, args.device, False, False
    env = make(cfg.env, num_envs=args.num_envs, device=args.device, seed=cfg.seed)
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    for _ in range(2):
        trainer.iterate()

    launches = collections.Counter()
    phase = ["outside"]
    launch = wp.launch

    def counted(kernel, *a, **k):
        launches[(phase[0], getattr(kernel, "key", str(kernel)))] += 1
        return launch(kernel, *a, **k)

    def in_phase(name: str, fn):
        def call(*a, **k):
            phase[0] = name
            try:
                return fn(*a, **k)
            finally:
                phase[0] = "outside"

        return call

    env_step, update = env.step, trainer.ppo.update
    env.step, trainer.ppo.update = in_phase("env step", env_step), in_phase("ppo update", update)
    wp.launch = counted
    trainer.profiling = True
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        trainer.iterate()
    trainer.profiling = False
    wp.launch = launch
    env.step, trainer.ppo.update = env_step, update

    events = prof.events()
    phases = {"env_step": "env step", "rollout": "rollout, not env step", "ppo_update": "ppo update"}
    ranges = [(e.name, e.time_range.start, e.time_range.end) for e in events if e.name in phases]

    def where(start: float) -> str:
        """The innermost phase open at `start` (an env step lies inside the rollout)."""
        inside = {name for name, a, b in ranges if a <= start <= b}
        return next((label for name, label in phases.items() if name in inside), "other")

    torch_ops = collections.Counter()

    def computes(e) -> bool:
        return e.name.startswith("aten::") and e.name not in NOT_KERNELS

    def innermost(e) -> int:
        """Counts the computing ops under `e` that call no computing op, and `e` if none is under it."""
        below = sum(innermost(child) for child in e.cpu_children)
        if below == 0 and computes(e):
            torch_ops[(where(e.time_range.start), e.name)] += 1
            return 1
        return below

    for e in events:
        if e.cpu_parent is None:
            innermost(e)
    warp_by_phase, by_phase = collections.Counter(), collections.Counter()
    for (where_, _), n in launches.items():
        warp_by_phase[where_] += n
    for (where_, _), n in torch_ops.items():
        by_phase[where_] += n
    steps = cfg.num_steps_per_env
    summary = {
        "task": args.task,
        "num_envs": args.num_envs,
        "device": args.device,
        "num_steps_per_env": steps,
        "num_mini_batches x epochs": [cfg.algo.num_mini_batches, cfg.algo.num_learning_epochs],
        "torch_ops_by_phase": dict(by_phase),
        "warp_launches_by_phase": dict(warp_by_phase),
        "warp_launches_per_env_step": warp_by_phase["env step"] / steps,
        "torch_ops_per_env_step": by_phase["env step"] / steps,
        "torch_ops_per_rollout_step_outside_env": by_phase["rollout, not env step"] / steps,
        "torch_ops_per_minibatch": by_phase["ppo update"] / (cfg.algo.num_mini_batches * cfg.algo.num_learning_epochs),
        "top_warp_kernels": collections.Counter({k: n for (_, k), n in launches.items()}).most_common(15),
        "top_torch_ops_by_phase": {
            p: [(k, n) for (w, k), n in torch_ops.most_common() if w == p][:12] for p in by_phase
        },
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
