"""bench.json, report.md and PNG plots of a benchmark run; merged comparisons of several runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from phalanx.bench.markdown import markdown_table
from phalanx.core.errors import ConfigError
from phalanx.core.files import write_text_atomic

PHASES = ("physics", "render", "obs_reward_reset", "policy_inference", "ppo_update")


def write_run(run_dir: Path, bench: dict[str, Any]) -> None:
    """Writes bench.json and, from it, report.md and the plots."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / "bench.json", json.dumps(bench, indent=2) + "\n")
    render(run_dir)


def load(run_dir: Path) -> dict[str, Any]:
    """A run's bench.json, checked to be a benchmark's (`read_bench`)."""
    path = Path(run_dir) / "bench.json"
    if not path.is_file():
        raise ConfigError(f"bench report: no bench.json in {run_dir}")
    return read_bench(path, "bench report")


def read_bench(path: Path, command: str) -> dict[str, Any]:
    """A bench.json file (any name), checked to be a benchmark's: its kind, results, machine,
    command and date; what is not is one line for `command`."""
    try:
        bench = json.loads(path.read_text())
    except (ValueError, OSError) as error:
        raise ConfigError(f"{command}: {path} is not readable JSON ({error})") from None
    if (
        not isinstance(bench, dict)
        or not isinstance(bench.get("kind"), str)
        or not isinstance(bench.get("results"), list)
        or not {"machine", "command", "date"} <= set(bench)
    ):
        raise ConfigError(
            f"{command}: {path} is not a phalanx bench.json (it lacks its kind, results, machine, command or date)"
        )
    return bench


def render(run_dir: Path) -> None:
    """(Re)builds report.md and the PNGs of a run directory from its bench.json."""
    bench = load(run_dir)
    valid = [r for r in bench["results"] if r.get("valid")]
    notes: list[str] = []
    if bench["kind"] == "scaling":
        from phalanx.bench import scaling

        plots, body = [scaling.plot(run_dir, bench["results"])], scaling.table(bench["results"])
    elif bench["kind"] == "startup":
        from phalanx.bench import startup

        plots, body = [], startup.table(bench["results"])
    elif bench["kind"] == "compare":
        from phalanx.bench import trainers

        plots, body = [trainers.plot(run_dir, bench["results"])], trainers.table(bench["results"])
    elif bench["kind"] == "learn":
        from phalanx.bench import learn_report

        body, plots = learn_report.body(run_dir, bench["results"])
    else:
        plots, body = [_plot_phases(run_dir, valid)], _table(bench["results"])
        if bench["device"] == "cpu":  # the table's memory-per-env column
            notes = ["On the CPU, memory per env is the growth of the process's peak resident memory.", ""]
    if bench["kind"] == "envs" and len(valid) > 1:
        plots.append(_plot_sweep(run_dir, valid))
    m = bench["machine"]
    lines = [
        f"# phalanx bench {bench['kind']}: {bench['task']}",
        "",
        f"- command: `{bench['command']}`",
        f"- date: {bench['date']}; commit: {m['commit']}",
        f"- device: {bench['device']} ({m['gpu']} x {m['gpu_count']}, driver {m['driver']}; CPU {m['cpu']}, "
        f"{m['cpu_count']} cores)" + (f"; GPU {', '.join(m['gpu_uuids'])}" if m.get("gpu_uuids") else ""),
        f"- versions: {', '.join(f'{k} {v}' for k, v in m['versions'].items())}",
        "",
        body,
        "",
    ]
    lines += notes
    if bench.get("telemetry"):
        lines += ["## Telemetry averages", "", "```", json.dumps(bench["telemetry"], indent=2), "```", ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots if p is not None]
    write_text_atomic(run_dir / "report.md", "\n".join(lines) + "\n")


def _table(results: list[dict[str, Any]]) -> str:
    columns = ["envs", "fps step", "fps step+inference", "fps total", "iteration ms", "physics", "render"]
    columns += ["obs/reward/reset"]
    encoders = any(r.get("encoder_s", 0.0) > 0 for r in results if r["valid"])  # a policy that sees images
    columns += ["inference"] + (["of it, image encoders"] if encoders else [])
    columns += ["update", "physics limit", "step / limit", "memory per env"]
    rows = []
    for r in results:
        if not r["valid"]:
            rows.append([str(r["num_envs"]), f"invalid: {r['reason']}"])
            continue
        ms = {k: f"{1e3 * v:.1f}" for k, v in ({"render": 0.0} | r["phases_s"]).items()}  # older runs: no render
        rows.append(
            [str(r["num_envs"]), f"{r['fps_step']:,.0f}", f"{r['fps_step_inference']:,.0f}", f"{r['fps_total']:,.0f}"]
            + [f"{1e3 * r['iteration_s']:.1f}", ms["physics"], ms["render"], ms["obs_reward_reset"]]
            + [ms["policy_inference"]]
            + ([f"{1e3 * r['encoder_s']:.1f}"] if encoders else [])
            + [
                ms["ppo_update"],
                f"{r['physics_limit_env_steps_per_s']:,.0f}",
                f"{100 * r['ratio_step_to_limit']:.0f} %",
            ]
            + [f"{r['memory_per_env_bytes'] / 1024:.1f} KiB"]
        )
    return markdown_table(columns, rows)


def _plot_phases(run_dir: Path, results: list[dict[str, Any]]) -> Path | None:
    if not results:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [str(r["num_envs"]) for r in results]
    bottom = [0.0] * len(results)
    for phase in PHASES:
        values = [1e3 * r["phases_s"].get(phase, 0.0) for r in results]
        ax.bar(labels, values, bottom=bottom, label=phase.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xlabel("envs")
    ax.set_ylabel("ms per training iteration")
    ax.set_title("where an iteration's time goes")
    ax.legend()
    path = run_dir / "phases.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_sweep(run_dir: Path, results: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = [r["num_envs"] for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for key in ("fps_step", "fps_step_inference", "fps_total"):
        left.plot(envs, [r[key] for r in results], marker="o", label=key)
    left.plot(envs, [r["physics_limit_env_steps_per_s"] for r in results], "k--", label="physics limit")
    left.set(xscale="log", yscale="log", xlabel="envs", ylabel="env steps / s", title="throughput")
    left.legend()
    right.plot(envs, [r["memory_per_env_bytes"] / 1024 for r in results], marker="o")
    right.set(xscale="log", xlabel="envs", ylabel="KiB per env", title="memory per env")
    path = run_dir / "envs.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def compare(run_dirs: list[Path], out_dir: Path) -> Path:
    """One table of every valid result of several runs (machines, tasks, env counts)."""
    columns = ["device", "gpu", "task", "GPUs", "envs", "fps step", "fps step+inference", "fps total"]
    columns += ["step / limit", "commit", "date"]
    rows = []
    for run_dir in run_dirs:
        bench = load(run_dir)
        m = bench["machine"]
        for r in bench["results"]:
            if r["valid"] and "fps_step" in r:  # throughput rows (not start-up ones)
                ratio = f"{100 * r['ratio_step_to_limit']:.0f} %" if "ratio_step_to_limit" in r else "-"
                rows.append(
                    [bench["device"], m["gpu"], bench["task"], str(r.get("gpus", 1))]
                    + [str(r.get("num_envs", r.get("total_envs"))), f"{r['fps_step']:,.0f}"]
                    + [f"{r['fps_step_inference']:,.0f}", f"{r['fps_total']:,.0f}", ratio, m["commit"], bench["date"]]
                )
    path = out_dir / "report.md"
    write_text_atomic(path, "# phalanx bench comparison\n\n" + markdown_table(columns, rows) + "\n")
    return path
