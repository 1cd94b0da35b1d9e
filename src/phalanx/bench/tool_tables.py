"""The docs' tables of contributor tools' results (`tools/*.py --out`, through `tool_bench`)."""

from __future__ import annotations

from typing import Any

from phalanx.bench.table_runs import Rows, Run, grouped, values_cell
from phalanx.core.errors import ConfigError


def stones(runs: list[Run]) -> Rows:
    """Per stepping-stones level (rows), each evaluated policy (a column per policy and run,
    `tools/stones_eval.py`): success, mean distance and share fallen."""
    policies = [(run, policy, rs) for run in runs for policy, rs in grouped(run, lambda b, r: r["policy"]).items()]
    levels = sorted({r["level"] for _, _, rs in policies for r in rs})
    rows = []
    for level in levels:
        cells = []
        for _, _, rs in policies:
            r = next((r for r in rs if r["level"] == level), None)
            cells.append("-" if r is None else f"{r['success']:.2f}, {r['distance_m']:.2f} m, {r['fell']:.2f}")
        rows.append([str(level), *cells])
    return ["level", *[f"{policy} ({run.label})" for run, policy, _ in policies]], rows


def played(runs: list[Run]) -> Rows:
    """`phalanx play --out`: a row per task and policy of each run (a seed is a run of its own),
    its episodes, their mean length and return, and the mean of each of the task's metrics (a
    column per metric any row has)."""
    entries = [(run, r) for run in runs for bench in run.benches for r in bench["results"]]
    metrics = list(dict.fromkeys(name for _, r in entries for name in r["metrics"]))
    rows = []
    for run, r in entries:
        rows.append(
            [r["task"], r["policy"], f"{r['num_envs']:,} x {r['steps']:,}", f"{r['episodes']:,}"]
            + [values_cell([r["mean_episode_length"]], digits=1), values_cell([r["mean_return"]], digits=2)]
            + [values_cell([r["metrics"].get(name)], digits=3) for name in metrics]  # "-": not a metric of its task
            + [run.label]
        )
    columns = ["task", "policy", "envs x steps", "episodes", "mean episode length", "mean return"]
    return columns + metrics + ["run"], rows


def qp_speed(runs: list[Run]) -> Rows:
    """`tools/qp_speed.py`: million QPs solved per second (repeats side by side), a row per solver
    and ADMM step count of each run, a column per batch of QPs (proxsuite, the one-core reference,
    solves one problem at a time: a batch of 1); the largest residuals over the row's batches and
    the problems flagged infeasible."""
    batches = sorted({r["batch"] for run in runs for bench in run.benches for r in bench["results"]})
    rows = []
    for run in runs:
        for (solver, steps), rs in grouped(run, lambda b, r: (_solver(r), r["iterations"])).items():
            rates: dict[int, list[float]] = {}
            for r in rs:
                rates.setdefault(r["batch"], []).append(r["qps_per_s"])
            primal = [r["primal_residual_max"] for r in rs if "primal_residual_max" in r]
            dual = [r["dual_residual_max"] for r in rs if "dual_residual_max" in r]
            flagged = [r["flagged"] for r in rs if "flagged" in r]
            rows.append(
                [solver, "-" if steps is None else str(steps)]
                + [values_cell(rates[n], 1e6, 3) if n in rates else "-" for n in batches]
                + [values_cell([max(primal, default=None)], digits=4), values_cell([max(dual, default=None)], digits=4)]
                + [str(sum(flagged)) if flagged else "-", run.label]
            )
    columns = ["solver", "ADMM steps", *[f"M QPs/s, {n:,} at once" for n in batches], "largest primal residual"]
    return columns + ["largest dual residual", "flagged", "run"], rows


def controller_speed(runs: list[Run]) -> Rows:
    """`tools/quadruped_controller_speed.py`: the quadruped controller alone, a row per body
    controller (force QP or MPC), its solver and ADMM steps of each run, a column per batch of
    robots: million controller steps per second, and the body controller's share of a step."""
    batches = sorted({r["batch"] for run in runs for bench in run.benches for r in bench["results"]})
    rows = []
    for run in runs:
        key = lambda b, r: (r.get("body_controller", "qp"), r["qp_backend"], r["qp_iterations"])  # noqa: E731
        for (body, backend, steps), rs in grouped(run, key).items():
            by_batch = {r["batch"]: r for r in rs}
            cells = [
                f"{values_cell([by_batch[n]['controller_steps_per_s']], 1e6, 2)} ({by_batch[n]['qp_share']:.0%})"
                if n in by_batch
                else "-"
                for n in batches
            ]
            rows.append([{"qp": "force QP", "mpc": "MPC"}[body], backend, str(steps), *cells, run.label])
    columns = ["body controller", "solver", "ADMM steps"]
    columns += [f"M steps/s, {n:,} robots (body's share)" for n in batches]
    return [*columns, "run"], rows


def _solver(r: dict[str, Any]) -> str:
    if r["backend"] == "warp":
        return f"one Warp kernel, {r['block_dim']} threads per block"
    if r["backend"] == "torch":
        return "torch steps, compiled" if r["compile"] else "torch steps"
    return r["backend"]  # the reference, named with its settings


def pipeline(runs: list[Run]) -> Rows:
    """`tools/qp_pipeline.py`: per task, env steps/s (ms per env step) of the captured env (the
    full-GPU pipeline), uncaptured, and host (each env's force QP solved on the CPU); the QP's
    share of the captured step, the host's time per QP, and the captured env's speed-up over host."""

    def rate(row: dict[str, Any]) -> str:
        return f"{row['env_steps_per_s']:,.0f} ({row['ms_per_env_step']:.1f} ms)"

    rows = []
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                qp = r["qp"]
                rows.append(
                    [r["task"], f"{r['num_envs']:,}", rate(r["captured"]), rate(r["uncaptured"]), rate(r["host"])]
                    + [f"{qp['ms_per_env_step']:.1f} ms, {100 * qp['share_of_captured']:.0f} %"]
                    + [f"{r['host']['per_qp_us']:.0f} us", f"**{_times(r['speedup_captured_over_host'])}**", run.label]
                )
    columns = ["task", "envs", "captured, env steps/s", "uncaptured", "host", "QP's share of the captured step"]
    return columns + ["host: one QP", "speed-up, captured over host", "run"], rows


def classic(runs: list[Run]) -> Rows:
    """`tools/classic_pipeline.py`: per task and env count, the classic pipeline's env steps/s (ms
    per env step: the policy's part, with its copies, and the workers' part), its worker processes
    of the host's cores, where the policy ran, and the lowest base height at the end (the robots
    still stand)."""
    rows = []
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                rows.append([
                    r["task"], f"{r['num_envs']:,}", f"{r['workers']} of {r['cpu_count']}", r["policy_device"],
                    f"{r['env_steps_per_s']:,.0f} ({r['ms_per_env_step']:.1f} ms)",
                    f"{r['policy_ms_per_env_step']:.1f} ms", f"{r['workers_ms_per_env_step']:.1f} ms",
                    f"{r['base_height_min']:.2f} m", run.label,
                ])  # fmt: skip
    columns = ["task", "envs", "workers (cores)", "policy on", "env steps/s", "policy, copies", "workers"]
    return columns + ["lowest base at the end", "run"], rows


def viewer(runs: list[Run]) -> Rows:
    """`tools/viewer_overhead.py`: per task of each run, the median fps_total of its plain runs
    (repeats side by side), and of those with `--viewer` and with a page open, each with its change
    against the plain runs' mean."""
    rows = []
    for run in runs:
        for task, rs in grouped(run, lambda b, r: r["task"]).items():
            fps = {mode: [r["fps_total"] for r in rs if r["mode"] == mode] for mode in ("plain", "viewer", "watched")}
            plain = sum(fps["plain"]) / len(fps["plain"]) if fps["plain"] else None
            cells = [task, str(len(fps["plain"])), values_cell(fps["plain"] or [None], 1e6, 3, " M")]
            for mode in ("viewer", "watched"):
                change = None if plain is None or not fps[mode] else 100 * (sum(fps[mode]) / len(fps[mode]) / plain - 1)
                cells += [values_cell(fps[mode] or [None], 1e6, 3, " M"), values_cell([change], digits=1, unit=" %")]
            rows.append([*cells, run.label])
    columns = ["task", "plain runs", "fps_total, plain", "with --viewer", "change"]
    return columns + ["with --viewer and a page open", "change", "run"], rows


def _times(ratio: float) -> str:
    """A speed-up: "169x", "2.4x"."""
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def scaling_model(runs: list[Run]) -> Rows:
    """`tools/scaling_model.py`: per task and GPU count, the model's iteration (its all-reduces C
    and the ranks' waiting J), its weak and strong scaling efficiency, and the measured one in
    brackets where a `bench scaling` run gave it."""

    def efficiency(predicted: float, measured: float | None) -> str:
        return f"{predicted:.0%}" + ("" if measured is None else f" ({measured:.0%})")

    rows = []
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                rows.append(
                    [bench["task"], str(r["gpus"]), f"{r['collectives_ms']:.2f} + {r['jitter_ms']:.2f}"]
                    + [f"{r['weak_envs_per_gpu']:,}", f"{r['weak_ms']:.1f}"]
                    + [efficiency(r["weak_efficiency"], r["weak_measured"])]
                    + [f"{r['strong_envs_per_gpu']:,.0f}", f"{r['strong_ms']:.1f}"]
                    + [efficiency(r["strong_efficiency"], r["strong_measured"]), run.label]
                )
    columns = ["task", "GPUs", "C + J ms", "weak: envs per GPU", "weak: ms", "weak efficiency (measured)"]
    columns += ["strong: envs per GPU", "strong: ms", "strong efficiency (measured)", "run"]
    return columns, rows


def students(runs: list[Run], steps: str) -> Rows:
    """`tools/student_runs.py`: a row per student of each run, its flags, envs, gradient steps per
    iteration and per second and fps total, then its training time and its metric / imitation loss
    (trailing means) after `steps` gradient steps (the first iteration that reached them; "-" where
    it stopped before), and after its last iteration."""
    try:
        at = int(steps)
    except ValueError:
        at = 0
    if at < 1:
        raise ConfigError(f"bench docs: a students table's steps is a whole number >= 1, got steps={steps!r}")
    metrics = {r["metric"] for run in runs for bench in run.benches for r in bench["results"]}
    metric = metrics.pop().rsplit("/", 1)[-1] if len(metrics) == 1 else "metric"
    rows = []
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                there = next((point for point in r["curve"] if point[0] >= at), None)
                rows.append(
                    [r["name"], f"`{r['flags']}`" if r["flags"] else "none", f"{r['num_envs']:,}"]
                    + [str(r["steps_per_iteration"]), values_cell([r["gradient_steps_per_s"]], digits=1)]
                    + [values_cell([r["fps_total"]], 1e3, 1, " k")]
                    + [*_student_point(there), *_student_point(r["curve"][-1]), run.label]
                )
    columns = ["student", "flags", "envs", "gradient steps per iteration", "gradient steps/s", "fps total"]
    for where in (f"at {at:,} steps", "at its end"):
        columns += [f"{where}: training s", f"{where}: {metric} / loss"]
    return [*columns, "run"], rows


def _student_point(point: list[float] | None) -> list[str]:
    """A curve point [gradient steps, training s, metric, loss] as its time and "metric / loss"."""
    if point is None:
        return ["-", "-"]
    _, seconds, metric, loss = point
    return [f"{seconds:.0f}", f"{values_cell([metric])} / {values_cell([loss], digits=3)}"]
