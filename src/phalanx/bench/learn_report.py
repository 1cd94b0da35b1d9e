"""The report of `phalanx bench learn`: a verdict per task, every run, and a plot per task of its
metric against the wall clock from launch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from phalanx.bench.learn import passes, run_label
from phalanx.bench.markdown import markdown_table


def by_task(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The runs by what they are judged under: the task, and its algorithm where not PPO (`run_label`)."""
    tasks: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        tasks.setdefault(run_label(r), []).append(r)
    return tasks


def judged(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs a task is judged on: its seeds (the extra cold run aside) that ran on warm caches,
    or, where none did, all its seeds."""
    seeds = [r for r in runs if not r["cold_run"] and r["status"] != "not run"]
    return [r for r in seeds if r["caches"] == "warm"] or seeds


def verdicts(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: the runs it is judged on (`judged`), how many reached the threshold, whether it
    passes, and its verdict in words."""
    out = {}
    for task, runs in by_task(results).items():
        seeds = judged(runs)
        reached = sum(r["reached"] for r in seeds)
        ok = passes(reached, len(seeds))
        out[task] = {"seeds": len(seeds), "reached": reached, "passes": ok, "verdict": _verdict(seeds, ok)}
    return out


def _verdict(judged: list[dict[str, Any]], ok: bool) -> str:
    """pass or **fail**; **no measure** where a run met the threshold in its first iteration."""
    if any(r["reached"] and r.get("reached_iteration") == 0 for r in judged):
        return "**no measure**: met in the first iteration"
    return "pass" if ok else "**fail**"


def _s(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def result_text(r: dict[str, Any]) -> str:
    return f"{r['metric']} {r['direction']} {r['threshold']:g} in {r['budget_s']:g} s"


def verdict_table(results: list[dict[str, Any]]) -> str:
    """One row per task: its result, seeds reached, each seed's time from launch, the cold run,
    pass or fail."""
    rows = []
    for task, v in verdicts(results).items():
        runs = by_task(results)[task]
        first = next((r for r in runs if "metric" in r), None)
        seeds = [r for r in runs if not r["cold_run"]]
        times = ", ".join(_reached(r) + after(r) for r in seeds)
        cold = next((r for r in runs if r["cold_run"]), None)
        cold_text = "-" if cold is None else (f"{cold['reached_s']:.0f}" if cold["reached"] else cold["status"])
        rows.append(
            [task, "-" if first is None else result_text(first), f"{v['reached']} of {v['seeds']}", times, cold_text]
            + [v["verdict"]]
        )
    columns = ["task", "result", "seeds reached", "s from launch, per seed (c: cold caches)", "cold run", "verdict"]
    return markdown_table(columns, rows)


def runs_table(results: list[dict[str, Any]]) -> str:
    """One row per run: seed, caches, GPU, how it ended, start-up, time to the threshold from
    launch and in training, fps_total, final metric, video."""
    columns = ["task", "seed", "caches", "GPU", "status", "start-up s", "reached (s from launch)"]
    columns += ["training s", "iteration", "fps total", "final metric", "jobs at once", "video"]
    rows = []
    for r in results:
        if r["status"] == "not run":
            rows.append([run_label(r), str(r["seed"]), "-", "-", f"not run: {r['reason']}"])
            continue
        gpu = (r.get("gpu_uuid") or r["slot"])[:12]
        seed = f"{r['seed']} (cold run)" if r["cold_run"] else str(r["seed"])
        rows.append(
            [run_label(r), seed, r["caches"], gpu, r["status"], _s(r["startup_s"], 1)]
            + [_s(r["reached_s"], 1) + after(r), _s(r["reached_training_s"], 1), _s(r["reached_iteration"])]
            + [_s(r["fps_total"]), _metric(r["final_metric"]), str(r["concurrent_jobs"])]
            + [_video(r)]
        )
    return markdown_table(columns, rows)


def _video(r: dict[str, Any]) -> str:
    """The run's video as a link, "play failed" (why: bench.json's `played`), or "-" (none asked)."""
    if r.get("video"):
        return f"[{r['video']}](videos/{r['video']})"
    return "play failed" if str(r.get("played", "")).startswith("play failed") else "-"


def after(r: dict[str, Any]) -> str:
    """ " after cartpole's 41 s": the runs a run started from (its teacher, its low-level policy's)
    and their wall clock, which its own time from launch leaves out; "" for none."""
    runs = r.get("prerequisites_s") or {}
    return "".join(f" after {task}'s {_s(wall_s)} s" for task, wall_s in runs.items())


def failures(results: list[dict[str, Any]]) -> list[str]:
    """Markdown sections with the log tail of each failed or killed run, and a warning for each
    run that met its threshold in its first iteration (the result then measures no learning)."""
    lines = []
    for r in results:
        if r["reached"] and r.get("reached_iteration") == 0:
            lines += [
                f"**{r['task']} seed {r['seed']} met its threshold in its first iteration**: "
                f"{r['metric']} {r['direction']} {r['threshold']:g} measures no learning.",
                "",
            ]
    for r in results:
        if r["status"] in ("failed", "killed"):
            lines += [f"### {r['task']} seed {r['seed']} ({r['caches']} caches): {r['reason']}", "", "```"]
            lines += [r.get("log_tail") or "(no output)", "```", ""]
    return lines


def body(run_dir: Path, results: list[dict[str, Any]]) -> tuple[str, list[Path]]:
    """report.md's tables and sections, and the plots it shows."""
    plots = [p for p in (plot_task(run_dir, task, runs) for task, runs in by_task(results).items()) if p]
    text = [
        verdict_table(results),
        "",
        "A task passes when at least two thirds of its seeds (2 of 3) reach its threshold within its budget "
        "of wall clock from launch; it is judged on its seeds that ran on warm caches, the extra cold run "
        "aside (on its cold seeds where none did). The metric is a moving mean over the last rows that carry "
        "it (per-episode means weighted by the row's episodes).",
        "",
        "## Runs",
        "",
        runs_table(results),
        "",
        *failures(results),
    ]
    return "\n".join(text), plots


def plot_task(run_dir: Path, task: str, runs: list[dict[str, Any]]) -> Path | None:
    """learn-TASK.png: each run's metric against the seconds from launch, the threshold and the budget."""
    curves = [r for r in runs if r.get("curve")]
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for r in curves:
        t, v = zip(*r["curve"], strict=True)
        label = f"seed {r['seed']}" + (" (cold caches)" if r["caches"] == "cold" else "")
        ax.plot(t, v, linestyle="--" if r["caches"] == "cold" else "-", label=label)
    first = curves[0]
    ax.axhline(first["threshold"], color="grey", linestyle=":", label=f"threshold {first['threshold']:g}")
    ax.axvline(first["budget_s"], color="black", linestyle=":", label=f"budget {first['budget_s']:g} s")
    ax.set(xlabel="seconds from launch", ylabel=first["metric"], title=task)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = run_dir / f"learn-{task.replace(' --algo ', '-')}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _reached(r: dict[str, Any]) -> str:
    """A run's seconds from launch to its threshold, or "no"; "c" after it where its caches were
    cold ("no c": missed on cold caches)."""
    cold = r["caches"] == "cold"
    if r["reached"]:
        return f"{r['reached_s']:.0f}" + ("c" if cold else "")
    return "no c" if cold else "no"


def from_launch(runs: list[dict[str, Any]]) -> str:
    """Each run's seconds from launch to its threshold ("no": missed), its start-up in brackets,
    "c" where its caches were cold ("no c": missed on cold caches)."""
    texts = []
    for r in runs:
        startup = "-" if r["startup_s"] is None else f"{r['startup_s']:.0f}"
        texts.append(f"{_reached(r)} ({startup}){after(r)}")
    return ", ".join(texts) or "-"
