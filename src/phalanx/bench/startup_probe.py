"""The process `phalanx bench startup` launches: starts training a task the way `phalanx train`
does and times each phase from the launch of the process, with the Warp modules each phase
loaded (compiled, or read from the kernel cache). Writes one JSON result.

    python -m phalanx.bench.startup_probe TASK NUM_ENVS DEVICE OUT.json

The launcher passes its clock at launch in PHALANX_LAUNCH_T (seconds since the epoch), so the
first phase includes the interpreter's start. The main thread is sampled ten times a second (in
torch.compile, waiting for Warp's module loads, or other) with the busy CPU cores, and each Warp
module's load is placed on the same clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LAUNCH_T = float(os.environ.get("PHALANX_LAUNCH_T", time.time()))
WARP_LOAD = re.compile(r"Module (\S+) .*load on device '([^']+)' took ([\d.]+) ms\s+\((compiled|cached)\)")


def warp_loads(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """Counts and times Warp's module-load lines (printed at log level INFO; each with the
    seconds from the launch it was logged at) in `lines`."""
    found = [(t, m) for t, line in lines for m in WARP_LOAD.finditer(line)]
    loads = [(m.group(1), float(m.group(3)) / 1e3, m.group(4)) for _, m in found]
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
        # [module, compiled or cached, start, end]: seconds from the launch
        "timeline": [
            [name, how, round(t - s, 3), round(t, 3)] for (t, _), (name, s, how) in zip(found, loads, strict=True)
        ],
    }


PHALANX_DIR = str(Path(__file__).resolve().parents[1]) + os.sep
"""Where phalanx's modules are: the samples name the innermost phalanx function."""


def _code_name(code: Any) -> str:
    """A frame's file (from its package: phalanx/sim/simulator.py, torch/_inductor/codecache.py,
    ast.py) and function."""
    path = code.co_filename
    if path.startswith(PHALANX_DIR):
        path = "phalanx/" + path.removeprefix(PHALANX_DIR)
    path = path.replace(os.sep, "/")
    if found := re.search(r"[/-]packages/(.*)", path) or re.search(r"/lib/python3\.\d+/(.*)", path):
        path = found.group(1)
    return f"{path}:{code.co_name}"


def main_thread_state(frame: Any) -> tuple[str, str, str]:
    """What a stack of the main thread is doing, where in phalanx (the innermost phalanx
    function, as module.function; "" outside phalanx), and its innermost frame outside Python's
    import machinery (file:function: the library call, or the module being imported). The states:
    - "waiting for Warp": for module loads on the compile threads;
    - "Warp": Warp's or MuJoCo Warp's own Python (code generation, model upload);
    - "torch.compile": importing its machinery, Dynamo tracing, AOTAutograd, inductor and its
      kernel compiles, and first calls' kernel timing (running compiled code is not compiling);
    - "waiting for the update's compile": for the trainer's second process;
    - "other"."""
    files, where, inner = [], "", ""
    while frame is not None:
        code = frame.f_code
        files.append(code.co_filename)
        if not inner and "importlib" not in code.co_filename:
            inner = _code_name(code)
        if not where and code.co_filename.startswith(PHALANX_DIR):
            module = code.co_filename.removeprefix(PHALANX_DIR).removesuffix(".py").replace(os.sep, ".")
            where = f"{module}.{code.co_name}"
        frame = frame.f_back
    if any(f.endswith("phalanx/sim/warp_compile.py") for f in files) and any("concurrent/futures" in f for f in files):
        return "waiting for Warp", where, inner
    if any("/warp/" in f or "/mujoco_warp/" in f for f in files[:3]):
        return "Warp", where, inner
    compiling = ("torch/_dynamo/convert_frame.py", "torch/_inductor/", "torch/_functorch/_aot_autograd/")
    if any(part in f for f in files for part in compiling):
        return "torch.compile", where, inner
    if where == "rl.update_compile.finish":
        return "waiting for the update's compile", where, inner
    return "other", where, inner


def cpu_times() -> tuple[float, float] | None:
    """(busy, total) CPU time summed over the machine's cores since boot, in clock ticks, from
    /proc/stat (None elsewhere). Guest time is inside user time there and is not counted twice."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


class Sampler:
    """Samples, every `interval_s` on a thread of its own, what the main thread does
    (`main_thread_state`) and how many CPU cores the machine keeps busy: rows of [seconds from
    the launch, state, busy cores, where in phalanx, innermost frame]."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s, self.rows = interval_s, []
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="startup-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        before, cores_in_all = cpu_times(), os.cpu_count() or 1
        while not self._stop.wait(self.interval_s):
            frame = sys._current_frames().get(self._main)
            now, cpu = time.time(), cpu_times()
            cores = None
            if cpu is not None and before is not None and cpu[1] > before[1]:  # busy share of the time since
                cores = (cpu[0] - before[0]) / (cpu[1] - before[1]) * cores_in_all
            before = cpu
            state, where, inner = main_thread_state(frame)
            # Held while waiting, the frame would keep the main thread's locals alive past their
            # function's return (a tensor that pins a gradient accumulator to a stream broke a CUDA
            # graph capture that way): the probe must not change what it measures.
            del frame
            busy = None if cores is None else round(cores, 1)
            self.rows.append([round(now - LAUNCH_T, 2), state, busy, where, inner])

    def split(self, start_s: float, end_s: float) -> dict[str, float]:
        """Seconds of each main-thread state between two times (from the launch): each sample
        counts for the time since the one before (longer than `interval_s` where the main thread
        held the GIL)."""
        out: dict[str, float] = {}
        previous = self.rows[0][0] - self.interval_s if self.rows else 0.0
        for t, state, *_ in self.rows:
            if start_s < t <= end_s:
                out[state] = round(out.get(state, 0.0) + t - max(previous, start_s), 2)
            previous = t
        return out


def _compile_times() -> dict[str, float]:
    """Seconds per timed step of torch.compile so far (Dynamo's `dynamo_timed` regions, nested);
    empty before torch._dynamo is imported."""
    if "torch._dynamo" not in sys.modules:
        return {}
    from torch._dynamo.utils import compile_times

    names, seconds = compile_times(repr="csv", aggregate=True)
    return dict(zip(names, (float(s) for s in seconds), strict=True))


def torch_compile_s() -> float:
    """Seconds torch.compile has spent in this process so far (Dynamo's own timer of its
    compilations: tracing, inductor, Triton), 0 before torch is imported."""
    return _compile_times().get("_compile.compile_inner", 0.0)


def torch_compile_breakdown() -> dict[str, float]:
    """Seconds per timed step of torch.compile so far (tracing, AOTAutograd, inductor's lowering,
    code generation, kernel compiles and loads), the largest first, from 0.05 s."""
    pairs = sorted(_compile_times().items(), key=lambda pair: -pair[1])
    return {name: round(s, 3) for name, s in pairs if s >= 0.05}


class Phases:
    """Times consecutive phases from the process launch and keeps the Warp module loads each
    phase logged (it is Warp's logger while it runs, at level INFO)."""

    def __init__(self) -> None:
        self.end_t = LAUNCH_T
        self.seconds: dict[str, float] = {}
        self.warp: dict[str, dict[str, Any]] = {}
        self.torch_compile: dict[str, float] = {}
        self.main_thread: dict[str, dict[str, float]] = {}
        self.sampler = Sampler()
        self._lines: list[tuple[float, str]] = []

    @contextlib.contextmanager
    def phase(self, name: str, sync: Any = None) -> Iterator[None]:
        self._lines = []
        compiled_before = torch_compile_s()
        yield
        if sync is not None:
            sync()
        now = time.time()
        self.main_thread[name] = self.sampler.split(self.end_t - LAUNCH_T, now - LAUNCH_T)
        self.seconds[name], self.end_t = now - self.end_t, now
        self.warp[name] = warp_loads(self._lines)
        self.torch_compile[name] = torch_compile_s() - compiled_before

    # Warp's Logger protocol
    def debug(self, message: str) -> None:
        pass

    def info(self, message: str) -> None:
        self._lines.append((time.time() - LAUNCH_T, message))

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        print(f"Warp warning: {message}", file=sys.stderr)

    def error(self, message: str) -> None:
        print(f"Warp error: {message}", file=sys.stderr)


def probe(task: str, num_envs: int, device_name: str) -> dict[str, Any]:
    phases = Phases()
    with phases.sampler:
        result = _probe(phases, task, num_envs, device_name)
    breakdown = torch_compile_breakdown()
    inductor: dict[str, int] = {}
    if "torch._inductor.config" in sys.modules:
        from torch._dynamo.utils import counters

        inductor["compile_threads"] = sys.modules["torch._inductor.config"].compile_threads  # its processes
        # Graphs inductor compiled (miss) or loaded from its cache (hit), e.g. the update's two when
        # the trainer's second process compiled them first.
        inductor |= {key: counters["inductor"][key] for key in ("fxgraph_cache_hit", "fxgraph_cache_miss")}
    return result | {
        "main_thread_s": phases.main_thread,
        "samples": phases.sampler.rows,
        "torch_compile_steps_s": breakdown,
        "inductor": inductor,
    }


def _probe(phases: Phases, task: str, num_envs: int, device_name: str) -> dict[str, Any]:
    with phases.phase("import"):
        import torch
        import warp as wp

        from phalanx.core.devices import resolve_device
        from phalanx.training.registry import make, train_cfg
        from phalanx.training.trainer import Trainer

        wp.config.log_level = wp.LOG_INFO  # Warp's module-load lines, counted per phase
        wp.set_logger(phases)
    device = resolve_device(device_name)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    cfg = train_cfg(task)
    cfg.num_envs, cfg.device = num_envs, str(device)
    # As `phalanx train`: the env, the trainer (which starts compiling its update in a second
    # process), then the env's first reset (which traces the compiled step).
    with phases.phase("model_build", sync):
        # verbose: make keeps Warp at level INFO (and prints the task's term tables into the log)
        env = make(cfg.env, num_envs=num_envs, device=device, seed=cfg.seed, verbose=True, reset=False)
    with phases.phase("trainer_init", sync):
        from rich.console import Console

        trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    with phases.phase("first_reset", sync):  # traces the compiled step, waits for the Warp modules it launches
        env.reset()
    with phases.phase("first_env_step", sync):  # physics kernels, the env's CUDA graph
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
