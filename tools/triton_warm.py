"""Which Triton kernels a process compiles itself while building and tracing a compiled env, and
which kernels inductor cannot launch from its graph cache, and why. Run it twice on one set of
caches: the second run is a warm start, which should compile nothing.

    for run in cold warm; do
      WARP_CACHE_PATH=C/warp TORCHINDUCTOR_CACHE_DIR=C/inductor TRITON_CACHE_DIR=C/triton \
        python tools/triton_warm.py anymal-rough > $run.log 2>&1
    done
    grep -E "RESULT|Bypass|TRITON-COMPILE" warm.log

A `TRITON-COMPILE` line is a kernel this process compiled (inductor's compile workers are other
processes; Triton does not name the kernel at that stage); a `Bypassing
StaticallyLaunchedCudaKernel` line names a kernel left out of inductor's FX graph cache entry,
which a warm start therefore compiles again.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import torch
import triton
import triton.backends.nvidia.compiler as nvidia

from phalanx.training.registry import make

START = time.perf_counter()
COMPILED: list[float] = []
"""Seconds from the start at which this process began compiling a Triton kernel."""


def _record_compiles() -> None:
    """Prints a line for each kernel Triton compiles in this process (its first stage after the
    cache), with the time since the start."""
    make_ttgir = nvidia.CUDABackend.make_ttgir

    def traced(*args):
        COMPILED.append(time.perf_counter() - START)
        print("TRITON-COMPILE", f"t={COMPILED[-1]:.2f}", flush=True)
        return make_ttgir(*args)

    nvidia.CUDABackend.make_ttgir = staticmethod(traced)


def main() -> None:
    for name in ("torch._inductor.runtime.triton_heuristics", "torch._inductor.triton_bundler"):
        logging.getLogger(name).setLevel(logging.INFO)
    _record_compiles()
    task = sys.argv[1]
    env = make(task, num_envs=4096, device="cuda")  # the first reset traces the compiled step
    built = time.perf_counter() - START
    actions = torch.zeros(env.num_envs, env.action_dim, device="cuda")
    for _ in range(3):
        env.step(actions)
    torch.cuda.synchronize()
    from torch._dynamo.utils import compile_times, counters

    print(f"RESULT {task}: make + first reset {built:.2f} s, pid {os.getpid()}, triton {triton.__version__}")
    print("RESULT inductor", dict(counters["inductor"]))
    print("RESULT Triton kernels compiled in this process:", len(COMPILED))
    print(compile_times(repr="str", aggregate=True))


if __name__ == "__main__":
    main()
