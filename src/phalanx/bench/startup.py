"""`phalanx bench startup`: the time from launching a training process to the end of its first
iteration, split into phases, with cold caches (Warp's kernel cache, torch's inductor and
Triton caches and the CUDA JIT cache all empty) and then warm (the same caches, filled)."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from phalanx.bench.markdown import markdown_table
from phalanx.bench.startup_split import split, split_table

PHASES = ("import", "model_build", "trainer_init", "first_reset", "first_env_step", "first_iteration")
"""Up to the end of the first iteration; results written before "first_reset" was timed apart
have it inside "model_build"."""
CACHE_VARIABLES = {
    "WARP_CACHE_PATH": "warp",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "cuda",
}


def cache_env(cache_dir: Path, cold: bool) -> dict[str, str]:
    """This process's environment with Warp's, inductor's, Triton's and CUDA's caches pointed at
    `cache_dir`'s warp/, inductor/, triton/ and cuda/, emptied first when `cold`."""
    env = dict(os.environ)
    for variable, sub in CACHE_VARIABLES.items():
        if cold:  # only the directories this bench made its own: never more of a given --cache-dir
            shutil.rmtree(cache_dir / sub, ignore_errors=True)
        (cache_dir / sub).mkdir(parents=True, exist_ok=True)
        env[variable] = str(cache_dir / sub)
    return env


def run(
    task: str, num_envs: int, device: str, cache_dir: Path, cold: bool, out_dir: Path, repeat: int = 1
) -> dict[str, Any]:
    """One training start in a fresh process with its caches in `cache_dir` (see `cache_env`), the
    `repeat`-th of its kind (its log: startup-warm.log, startup-warm-2.log, ...). Returns the
    probe's result and the process's wall clock, or why it failed."""
    label = "cold" if cold else "warm"
    env = cache_env(cache_dir, cold)
    name = label if repeat == 1 else f"{label}-{repeat}"
    result_path, log_path = out_dir / f"startup-{name}.json", out_dir / f"startup-{name}.log"
    command = [sys.executable, "-m", "phalanx.bench.startup_probe", task, str(num_envs), device, str(result_path)]
    env["PHALANX_LAUNCH_T"] = repr(time.time())
    start = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    wall_s = time.perf_counter() - start
    if proc.returncode != 0 or not result_path.is_file():
        tail = log_path.read_text()[-2000:].strip().splitlines()
        reason = tail[-1] if tail else "no output"
        reason = f"exit {proc.returncode}: {reason} (see {log_path.name})"
        return {"run": label, "name": name, "valid": False, "reason": reason}
    result = json.loads(result_path.read_text())
    result_path.unlink()
    result = {"run": label, "name": name, "valid": True, "process_wall_s": wall_s, **result}
    return result | {"main_thread_split_s": split(result)}


def table(results: list[dict[str, Any]]) -> str:
    """Seconds per phase up to the end of the first iteration, Warp's share, and what follows."""
    columns = ["run", "launch -> first iteration", *PHASES, "Warp modules compiled / cached"]
    columns += ["Warp compile: sum / longest module", "Warp cached load", "torch.compile"]
    columns += ["second iteration", "steady iteration"]
    rows = []
    for r in results:
        if not r["valid"]:
            rows.append([_label(r), f"invalid: {r['reason']}"])
            continue
        s = r["phases_s"]
        warp = [w for phase, w in r["warp"].items() if phase in PHASES]
        compiled, cached = sum(w["compiled"] for w in warp), sum(w["cached"] for w in warp)
        rows.append(
            [_label(r), f"**{r['to_first_iteration_s']:.1f} s**", *(f"{s[p]:.1f}" if p in s else "-" for p in PHASES)]
            + [f"{compiled} / {cached}"]
            + [f"{sum(w['compile_s'] for w in warp):.1f} / {max(w.get('longest_compile_s', 0.0) for w in warp):.1f}"]
            + [f"{sum(w['cached_load_s'] for w in warp):.1f}"]
            + [f"{sum(v for p, v in r.get('torch_compile_s', {}).items() if p in PHASES):.1f}"]
            + [f"{s['second_iteration']:.2f}", f"{s['steady_iteration']:.3f}"]
        )
    rows += median_rows(results)
    note = (
        "Seconds; each phase counts from the end of the one before it, the first from the launch. Warp"
        " compiles a step's modules in parallel, so their summed compile time exceeds the wall clock; the"
        " longest module is the floor. torch.compile: Dynamo's own timer (tracing, inductor, Triton)."
    )
    if any(r["valid"] and not r.get("python_bytecode_cache", True) for r in results):
        note += (
            " Python wrote no bytecode cache here (PYTHONDONTWRITEBYTECODE): each process compiled"
            " the Python source of its imports anew, which an installed package does once."
        )
    if any(r["valid"] and "main_thread_s" in r for r in results):
        note += "\n\n" + main_thread_table(results)
    parts = split_table(results)
    if parts:
        note += "\n\n" + parts
    return markdown_table(columns, rows) + "\n\n" + note


def _label(result: dict[str, Any]) -> str:
    """A run's row label: its name (warm, warm-2, ...: its log is startup-NAME.log)."""
    return result.get("name", result["run"])


def median_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    """For each kind of run repeated (`--runs cold,warm,warm,warm`): its median time to the first
    iteration with the range, and each phase's median. Warm starts of one task on one machine
    vary by seconds from run to run; one run does not tell differences of that size."""
    rows = []
    for label in ("cold", "warm"):
        valid = [r for r in results if r["valid"] and r["run"] == label]
        if len(valid) < 2:
            continue
        total = [r["to_first_iteration_s"] for r in valid]
        phases = [
            f"{statistics.median(r['phases_s'][p] for r in valid):.1f}"
            if all(p in r["phases_s"] for r in valid)
            else "-"
            for p in PHASES
        ]
        launch = f"**{statistics.median(total):.1f} s** ({min(total):.1f}-{max(total):.1f})"
        rows.append([f"{label}, median of {len(valid)}", launch, *phases])
    return rows


STATES = ("torch.compile", "waiting for Warp", "Warp", "waiting for the update's compile", "other")
"""What the probe's sampler saw the main thread do (`startup_probe.main_thread_state`)."""


def main_thread_table(results: list[dict[str, Any]]) -> str:
    """Up to the end of the first iteration: the main thread's seconds in each state and in
    Triton's compiler (`triton_compiling_s`); when the last Warp module finished loading, and the
    CPU cores kept busy on average."""
    columns = ["run", *(f"main thread: {state}" for state in STATES), "main thread: in Triton's compiler"]
    columns += ["Warp modules done at", "busy CPU cores"]
    rows, recompiled = [], []
    for r in results:
        if not r["valid"] or "main_thread_s" not in r:
            continue
        split = [r["main_thread_s"].get(p, {}) for p in PHASES]
        ends = [m[3] for p in PHASES for m in r["warp"].get(p, {}).get("timeline", [])]
        cores = [row[2] for row in r["samples"] if row[2] is not None and row[0] <= r["to_first_iteration_s"]]
        triton = triton_compiling_s(r)
        if r["run"] == "warm" and triton is not None and triton >= RECOMPILED_S:
            recompiled.append(triton)
        rows.append(
            [_label(r), *(f"{sum(s.get(state, 0.0) for s in split):.1f}" for state in STATES)]
            + ["-" if triton is None else f"{triton:.1f}"]
            + [f"{max(ends):.1f} s" if ends else "-", f"{sum(cores) / len(cores):.1f}" if cores else "-"]
        )
    note = (
        "Seconds, sampled ten times a second from the probe's start (after the interpreter's) to the end of"
        " the first iteration. Warp: Warp's or MuJoCo Warp's own Python on the main thread (code generation,"
        " model upload); waiting for Warp: for modules still compiling on the compile threads; running"
        " compiled code counts as other."
    )
    if recompiled:
        note += (
            f" A warm run spent {max(recompiled):.1f} s in Triton's compiler: kernels that inductor did not"
            " take from its cache were compiled again."
        )
    return markdown_table(columns, rows) + "\n\n" + note


TRITON_COMPILER = re.compile(
    r"triton/(backends/\w+/compiler\.py|compiler/code_generator\.py|compiler/compiler\.py:make_ir$)"
)
"""A sample's innermost frame while Triton compiles a kernel: its stages, not its cache lookups
or kernel launches (older samples keep a site-packages/ prefix). ptxas, which Triton runs as a
process, is not seen."""
RECOMPILED_S = 0.2
"""Seconds in Triton's compiler past which a warm run is said to have compiled kernels again."""


def triton_compiling_s(result: dict[str, Any]) -> float | None:
    """Seconds the main thread spent in Triton's compiler up to the end of the first iteration:
    each sample there counts for the time since the one before. A warm start should spend none
    (inductor's FX graph cache holds the compiled kernels). None for samples written before they
    named the innermost frame."""
    if not any(len(row) > 4 for row in result["samples"]):
        return None
    seconds, previous = 0.0, None
    for t, _state, _cores, *frames in result["samples"]:
        inner = frames[1] if len(frames) > 1 else ""
        if previous is not None and t <= result["to_first_iteration_s"] and TRITON_COMPILER.search(inner):
            seconds += t - previous
        previous = t
    return round(seconds, 2)
