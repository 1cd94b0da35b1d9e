"""Where a training start's main thread went, up to the end of its first iteration: the probe's
samples (`startup_probe`) sorted into what a reader can act on, imports, torch.compile's
imports, the env step's trace, the first iteration, so that a missed start-up target shows what
is left and why."""

from __future__ import annotations

from typing import Any

from phalanx.bench.markdown import markdown_table

PARTS = (
    "imports",
    "imports while building",
    "torch.compile's imports",
    "Warp's Python",
    "waiting for Warp",
    "env step's torch.compile",
    "update's torch.compile",
    "waiting for the update's compile",
    "the rest",
)
"""- imports: torch, Warp and phalanx, before anything is built;
- imports while building: the modules the build imports on first use, most of it MuJoCo Warp,
  whose import parses the source of each of its hundreds of kernels;
- torch.compile's imports: Dynamo and inductor (with sympy and Triton), where something compiles;
- Warp's Python: Warp's and MuJoCo Warp's own Python after their import (hashing and loading
  modules, generating code, uploading the model);
- waiting for Warp: for modules still compiling on the compile threads;
- env step's torch.compile: Dynamo tracing the env step, AOTAutograd and inductor (with a warm
  cache: loading its kernels);
- update's torch.compile: the same for the PPO update, in the first iteration;
- waiting for the update's compile: for the second process compiling it (cold caches);
- the rest: building the env (its first, eager step included), the first rollout and update."""


def split(result: dict[str, Any]) -> dict[str, float]:
    """Seconds of `result`'s main thread in each of `PARTS` up to the end of its first iteration.
    Each sample counts for the time since the one before it (the first since the launch)."""
    ends, total = [], 0.0
    for phase, phase_s in result["phases_s"].items():  # in order, each from the end of the one before
        total += phase_s
        ends.append((total, phase))
    seconds = dict.fromkeys(PARTS, 0.0)
    previous = 0.0
    for t, state, _cores, where, *_ in result["samples"]:
        if t > result["to_first_iteration_s"]:
            break
        phase = next((name for end, name in ends if t <= end), "first_iteration")
        seconds[_part(phase, state, where)] += t - previous
        previous = t
    return {part: round(value, 2) for part, value in seconds.items()}


def _part(phase: str, state: str, where: str) -> str:
    if phase == "import":
        return "imports"
    if where == "compiling.import_compiler":
        return "torch.compile's imports"
    if where.endswith(".<module>"):
        return "imports while building"
    if state == "torch.compile":
        return "update's torch.compile" if phase == "first_iteration" else "env step's torch.compile"
    return {
        "Warp": "Warp's Python",
        "waiting for Warp": "waiting for Warp",
        "waiting for the update's compile": "waiting for the update's compile",
    }.get(state, "the rest")


def split_table(results: list[dict[str, Any]]) -> str:
    """`split` of each valid run that has samples (those written before samples named the phalanx
    function have none to sort), as a markdown table with a note."""
    rows = [
        [result.get("name", result["run"]), f"{result['to_first_iteration_s']:.1f}"]
        + [f"{value:.1f}" for value in split(result).values()]
        for result in results
        if result["valid"] and any(len(row) > 3 for row in result.get("samples", []))
    ]
    if not rows:
        return ""
    note = (
        "Seconds of the main thread up to the end of the first iteration, by what it was doing (the"
        " samples, ten a second); the parts sum to the launch -> first iteration time within a sample."
    )
    return markdown_table(["run", "launch -> first iteration", *PARTS], rows) + "\n\n" + note
