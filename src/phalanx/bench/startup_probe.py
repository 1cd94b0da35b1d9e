"""The process `phalanx bench startup` launches: starts training a task the way `phalanx train`
does and times each phase from the launch of the process, with the Warp modules each phase
loaded (compiled, or read from the kernel cache). Writes one JSON result.

    python -m phalanx.bench.startup_probe TASK NUM_ENVS DEVICE OUT.json

The launching process passes its clock at launch in PHALANX_LAUNCH_T (seconds since the epoch),
so the first phase includes the interpreter's own start.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LAUNCH_T = float(os.environ.get("PHALANX_LAUNCH_T", time.time()))
WARP_LOAD = re.compile(r"Module (\S+) .*load on device '([^']+)' took ([\d.]+) ms\s+\((compiled|cached)\)")


def warp_loads(text: str) -> dict[str, Any]:
    """Counts and times Warp's module-load lines (printed at log level INFO) in `text`."""
    loads = [(m.group(1), float(m.group(3)) / 1e3, m.group(4)) for m in WARP_LOAD.finditer(text)]
    compiled = [(s, name) for name, s, how in loads if how == "compiled"]
    cached = [s for _, s, how in loads if how == "cached"]
    longest_s, longest = max(compiled, default=(0.0, None))
    return {
        "modules": len(loads),
        "compiled": len(compiled),
        "compile_s": sum(s for s, _ in compiled),  # summed over modules, which may compile in parallel
        "longest_compile_s": longest_s,  # the floor of a parallel compile
        "longest_module": longest,
        "cached": len(cached),
        "cached_load_s": sum(cached),
    }


def torch_compile_s() -> float:
    """Seconds torch.compile has spent in this process so far (Dynamo's own timer of its
    compilations: tracing, inductor, Triton), 0 before torch is imported."""
    if "torch._dynamo" not in sys.modules:
        return 0.0
    from torch._dynamo.utils import compile_times

    names, seconds = compile_times(repr="csv", aggregate=True)
    return float(seconds[names.index("_compile.compile_inner")]) if "_compile.compile_inner" in names else 0.0


class Phases:
    """Times consecutive phases from the process launch and keeps the Warp module loads each
    phase logged (it is Warp's logger while it runs, at level INFO)."""

    def __init__(self) -> None:
        self.end_t = LAUNCH_T
        self.seconds: dict[str, float] = {}
        self.warp: dict[str, dict[str, Any]] = {}
        self.torch_compile: dict[str, float] = {}
        self._lines: list[str] = []

    @contextlib.contextmanager
    def phase(self, name: str, sync: Any = None) -> Iterator[None]:
        self._lines = []
        compiled_before = torch_compile_s()
        yield
        if sync is not None:
            sync()
        now = time.time()
        self.seconds[name], self.end_t = now - self.end_t, now
        self.warp[name] = warp_loads("\n".join(self._lines))
        self.torch_compile[name] = torch_compile_s() - compiled_before

    # Warp's Logger protocol
    def debug(self, message: str) -> None:
        pass

    def info(self, message: str) -> None:
        self._lines.append(message)

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        print(f"Warp warning: {message}", file=sys.stderr)

    def error(self, message: str) -> None:
        print(f"Warp error: {message}", file=sys.stderr)


def probe(task: str, num_envs: int, device_name: str) -> dict[str, Any]:
    phases = Phases()
    with phases.phase("import"):
        import torch
        import warp as wp

        from phalanx.devices import resolve_device
        from phalanx.registry import make, train_cfg
        from phalanx.rl.trainer import Trainer

        wp.config.log_level = wp.LOG_INFO  # Warp's module-load lines, counted per phase
        wp.set_logger(phases)
    device = resolve_device(device_name)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    cfg = train_cfg(task)
    cfg.num_envs, cfg.device = num_envs, str(device)
    with phases.phase("model_build", sync):
        # verbose: make keeps Warp at level INFO (and prints the task's term tables into the log)
        env = make(cfg.env, num_envs=num_envs, device=device, seed=cfg.seed, verbose=True)
    with phases.phase("trainer_init", sync):
        from rich.console import Console

        trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    with phases.phase("first_env_step", sync):  # physics kernels, torch.compile, the env's CUDA graph
        env.step(torch.zeros(env.num_envs, env.action_dim, device=device))
    with phases.phase("first_iteration", sync):  # eager rollout and update
        trainer.iterate()
    to_first_iteration = phases.end_t - LAUNCH_T
    with phases.phase("second_iteration", sync):  # the rollout's and the update's CUDA graphs
        trainer.iterate()
    with phases.phase("steady_iteration", sync):
        trainer.iterate()
    return {
        "task": task,
        "num_envs": num_envs,
        "device": str(device),
        "to_first_iteration_s": to_first_iteration,
        # Without it every process compiles the Python source of torch, Warp and phalanx anew
        # (seconds); a pip install writes the bytecode once.
        "python_bytecode_cache": not sys.dont_write_bytecode,
        "phases_s": phases.seconds,
        "warp": phases.warp,
        "torch_compile_s": phases.torch_compile,
    }


def main(argv: list[str]) -> None:
    task, num_envs, device, out = argv
    result = probe(task, int(num_envs), device)
    Path(out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
