"""`phalanx bench docs`: a docs page's tables are rebuilt from the raw results their markers name,
each row with its run's command, date, commit and GPU; `--check` catches a table edited by hand;
bad markers and sources are one line, exit 2. And the docs' tables are what their results give."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.cli import main

ROOT = Path(__file__).resolve().parents[2]
MACHINE = {"gpu": "NVIDIA H200", "gpu_count": 1, "gpu_uuids": ["GPU-7b34d2b7-d8a4"], "commit": "abc1234"}


def _throughput(fps_total: float, run_dir: str, task: str = "cartpole") -> dict:
    result = {"task": task, "num_envs": 4096, "valid": True, "fps_step": 6e6, "fps_step_inference": 5e6}
    result |= {"fps_total": fps_total, "iteration_s": 0.018, "ratio_step_to_limit": 0.8, "memory_per_env_bytes": 157696}
    command = f"phalanx bench throughput {task} --num-envs 4096 --run-dir {run_dir}"
    return {"kind": "throughput", "task": task, "command": command, "date": "2026-11-29", "device": "cuda:0"} | {
        "machine": MACHINE,
        "results": [result],
    }


def _page(tmp_path: Path, sources: str = "results/tp/*.json", kind: str = "throughput") -> Path:
    raw = tmp_path / "results" / "tp"
    raw.mkdir(parents=True, exist_ok=True)
    for name, bench in [
        ("cartpole-1.json", _throughput(3.62e6, "/tmp/a")),  # two repeats of one command: one run
        ("cartpole-2.json", _throughput(3.61e6, "/tmp/b")),
        ("ant.json", _throughput(1.66e6, "/tmp/c", "ant")),
    ]:
        (raw / name).write_text(json.dumps(bench))
    page = tmp_path / "benchmarks.md"
    page.write_text(
        f"# Benchmarks\n\nintro\n\n<!-- bench-table {kind}: {sources} -->\nold\n<!-- bench-table end -->\n\nend\n"
    )
    return page


def _built(tmp_path: Path, marker: str) -> str:
    """A page of one table, `<!-- bench-table MARKER -->`, as `phalanx bench docs` builds it."""
    page = tmp_path / "benchmarks.md"
    page.write_text(f"<!-- bench-table {marker} -->\n<!-- bench-table end -->\n")
    assert main(["bench", "docs", str(page)]) == 0
    return page.read_text()


def test_a_table_is_rebuilt_from_its_raw_results_with_each_runs_provenance(tmp_path, capsys) -> None:
    page = _page(tmp_path)
    assert main(["bench", "docs", str(page), "--check"]) == 1, "the hand-written 'old' is not what the results give"
    assert main(["bench", "docs", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n\n<!-- bench-table throughput: results/tp/*.json -->\n")
    assert text.endswith("<!-- bench-table end -->\n\nend\n") and "old" not in text
    assert "| ant | H200 | 4,096 | 1.66 M | 6.00 M | 5.00 M | 18.0 | 80 % | 154 KiB | A |" in text
    assert "| cartpole | H200 | 4,096 | 3.62, 3.61 M | 6.00, 6.00 M |" in text and text.count("| cartpole |") == 1
    assert (
        "- B: `phalanx bench throughput cartpole --num-envs 4096`; 2026-11-29, commit abc1234, "
        "1 x NVIDIA H200 (GPU-7b34d2b7); [raw results](results/tp/)" in text
    )
    assert main(["bench", "docs", str(page), "--check"]) == 0
    page.write_text(text.replace("3.62, 3.61 M", "3.70, 3.61 M"))  # a figure edited by hand
    capsys.readouterr()
    assert main(["bench", "docs", str(page), "--check"]) == 1
    assert "its tables differ from its raw results" in capsys.readouterr().out


def test_a_table_can_keep_some_tasks_only(tmp_path) -> None:
    page = _page(tmp_path, "results/tp/*.json tasks=ant")
    assert main(["bench", "docs", str(page)]) == 0
    text = page.read_text()
    assert "| ant | H200 |" in text and "cartpole" not in text, "cartpole's rows and its run's note left out"
    assert "- A: `phalanx bench throughput ant --num-envs 4096`" in text


def test_a_phases_table_splits_the_iteration_and_names_an_invalid_setting(tmp_path) -> None:
    page = _page(tmp_path, "results/tp/ant.json", "phases")
    bench = json.loads((tmp_path / "results" / "tp" / "ant.json").read_text())
    bench["results"][0]["phases_s"] = {"physics": 0.010, "policy_inference": 0.002, "ppo_update": 0.005}
    oom = "out of GPU memory (CUDA out of memory. Tried to allocate 1.88 GiB)"
    bench["results"].append({"task": "ant", "num_envs": 65536, "valid": False, "reason": oom})
    (tmp_path / "results" / "tp" / "ant.json").write_text(json.dumps(bench))
    assert main(["bench", "docs", str(page)]) == 0
    text = page.read_text()
    assert "| ant | H200 | 4,096 | 1.66 M | 18.0 | 10.0 | 0.0 | 0.0 | 2.0 | 5.0 | 154 KiB | A |" in text
    assert "| ant | H200 | 65,536 | invalid: out of GPU memory |" in text and "Tried to allocate" not in text


def test_a_memory_table_gives_what_each_env_more_costs(tmp_path) -> None:
    """From `bench envs`' memory in use at each count: 1 GiB at 1,024 envs and 2.5 GiB at 4,096
    make (1.5 GiB) / (3,072 envs) = 512 KiB per env more; a count that did not fit says so."""
    raw = tmp_path / "results" / "envs"
    raw.mkdir(parents=True)
    bench = _throughput(1e6, "/tmp/a", "ant") | {"kind": "envs", "command": "phalanx bench envs ant"}
    counts = [(1024, 2**30), (4096, 2.5 * 2**30)]
    bench["results"] = [{"task": "ant", "num_envs": n, "valid": True, "memory_bytes": used} for n, used in counts]
    bench["results"].append({"task": "ant", "num_envs": 65536, "valid": False, "reason": "out of GPU memory (...)"})
    (raw / "ant.json").write_text(json.dumps(bench))
    text = _built(tmp_path, "memory: results/envs/*.json")
    assert "| ant | H200 | 1,024 | 1.00 GiB | - | A |" in text
    assert "| ant | H200 | 4,096 | 2.50 GiB | 512 KiB | A |" in text
    assert "| ant | H200 | 65,536 | invalid: out of GPU memory |  | A |" in text


@pytest.mark.parametrize(
    ("sources", "kind", "message"),
    [
        ("results/tp/*.json tasks=nope", "throughput", "no result of nope in the throughput table's sources"),
        ("results/nothing/*.json", "throughput", "'results/nothing/*.json' matches no file"),
        ("results/tp/*.json", "plots", "no table of kind 'plots'; the kinds: learn, milestones, throughput"),
        ("results/tp/ant.json", "learn", "is a `bench throughput` result, not one for a learn table"),
        ("results/tp", "throughput", "results/tp/bench.json is not readable JSON"),
        ("/abs/*.json", "throughput", "'/abs/*.json' is absolute; name raw results relative to the page"),
        ("tasks=ant", "throughput", "the throughput table's marker names no raw results"),
        ("results/tp/*.json levels=5", "throughput", "a throughput table takes no option 'levels'; its options: tasks"),
        ("results/tp/*.json", "milestones", "a milestones table needs `levels=...` in its marker"),
    ],
)
def test_a_bad_marker_is_one_line(tmp_path, capsys, sources: str, kind: str, message: str) -> None:
    page = _page(tmp_path, sources, kind)
    before = page.read_text()
    assert main(["bench", "docs", str(page)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert page.read_text() == before, "nothing written"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("<!-- bench-table end -->", ""), ":5: a table's begin marker without `<!-- bench-table end -->` after it"),
        (("throughput:", "Throughput:"), ":5: expected `<!-- bench-table KIND: RESULTS... -->`"),
        (("*.json -->", "*.json --> "), ":5: expected `<!-- bench-table KIND: RESULTS... -->`"),
        (("intro", "<!-- bench-table end -->"), ":3: an end marker without a table's begin marker before it"),
    ],
)
def test_a_malformed_marker_is_named_by_its_line(tmp_path, capsys, edit: tuple[str, str], message: str) -> None:
    page = _page(tmp_path)
    page.write_text(page.read_text().replace(*edit))
    assert main(["bench", "docs", str(page)]) == 2
    assert message in capsys.readouterr().err


def test_a_physics_table_puts_the_env_beside_the_physics_per_env_step(tmp_path) -> None:
    """tools/env_fps.py's results: physics rates are per physics step, so per env step they are
    over the decimation; a run whose GPU UUID was not recorded says so."""
    result = {"task": "ant", "num_envs": 4096, "decimation": 2, "nconmax_per_env": 28, "njmax_per_env": 92}
    result |= {"raw_physics_steps_per_s": 7.12e6, "raw_physics_steps_per_s_random_ctrl": 3.72e6}
    result |= {"env_steps_per_s": 1.66e6, "ratio_to_limit": 0.466, "ratio_to_random_ctrl_physics": 0.893}
    result |= {"env_steps_per_s_captured_uncompiled": 1.34e6, "env_steps_per_s_compiled_uncaptured": 1.63e6}
    result |= {"env_steps_per_s_eager": 0.97e6, "startup_s": 29.2}
    bench = {"kind": "physics", "task": "ant", "command": "python tools/env_fps.py --tasks ant", "date": "2026-11-21"}
    bench |= {"device": "cuda:0", "machine": MACHINE | {"gpu_uuids": []}, "results": [result]}
    raw = tmp_path / "results" / "physics"
    raw.mkdir(parents=True)
    (raw / "bench.json").write_text(json.dumps(bench))
    text = _built(tmp_path, "physics: results/physics")
    row = "| ant | H200 | 4,096 | 3.56 | **1.66** | **47 %** | 1.86 | 89 % | 1.34 | 1.63 | 0.97 | 29 | 28 / 92 | A |"
    assert row in text, text
    note = "- A: `python tools/env_fps.py --tasks ant`; 2026-11-21, commit abc1234, 1 x NVIDIA H200 (UUID not recorded)"
    assert note in text


def test_a_stones_table_puts_each_policy_beside_the_others_per_level(tmp_path) -> None:
    """tools/stones_eval.py's results, one bench.json per policy: a row per level, a column per
    policy and run; a level one policy was not evaluated on shows "-"."""
    raw = tmp_path / "results" / "stones"
    raw.mkdir(parents=True)
    for name, levels, date in [("heuristic", 2, "2026-11-29"), ("over the MPC", 1, "2026-11-30")]:
        rows = [
            {"level": k, "envs": 400, "success": 0.5 / (k + 1), "distance_m": 3.0 - k, "fell": 0.1 * k}
            for k in range(levels)
        ]
        bench = {
            "kind": "stones",
            "task": "anymal-stones-qp",
            "command": f"python tools/stones_eval.py anymal-stones-qp --label {name}",
        }
        bench |= {"date": date, "device": "cuda:0", "machine": MACHINE, "results": [r | {"policy": name} for r in rows]}
        (raw / f"{name}.json").write_text(json.dumps(bench))
    text = _built(tmp_path, "stones: results/stones/*.json")
    assert "| level | heuristic (A) | over the MPC (B) |" in text, text
    assert "| 0 | 0.50, 3.00 m, 0.00 | 0.50, 3.00 m, 0.00 |" in text
    assert "| 1 | 0.25, 2.00 m, 0.10 | - |" in text


def test_a_milestones_table_gives_when_each_run_first_reached_each_level(tmp_path) -> None:
    """From the learning suite's curves: the first point at or past each level, the suite's own
    time at the threshold (the thinned curve may have dropped that point), "-" where never."""
    raw = tmp_path / "results" / "learn"
    raw.mkdir(parents=True)
    curve = [[60.0, 0.0], [100.0, 4.0], [150.0, 6.0], [200.0, 9.0], [250.0, 8.0]]
    result = {"task": "shadow-cube", "seed": 0, "caches": "warm", "status": "reached", "reached": True}
    result |= {"metric": "metrics/consecutive_successes", "direction": ">=", "threshold": 10.0, "reached_s": 262.4}
    result |= {"startup_s": 58.6, "curve": curve}
    missed = result | {"seed": 1, "status": "missed", "reached": False, "reached_s": None, "curve": curve[:3]}
    bench = {"kind": "learn", "task": "shadow-cube", "command": "phalanx bench learn shadow-cube --seeds 2"}
    bench |= {"date": "2026-11-29", "device": "cuda", "machine": MACHINE, "results": [result, missed]}
    (raw / "bench.json").write_text(json.dumps(bench))
    text = _built(tmp_path, "milestones: results/learn levels=5,10")
    assert "| task | metric | seed | caches | 5: s from launch | 10: s from launch | start-up (s) | run |" in text
    assert "| shadow-cube | metrics/consecutive_successes (>=) | 0 | warm | 150 | 262 | 59 | A |" in text
    assert "| shadow-cube | metrics/consecutive_successes (>=) | 1 | warm | 150 | - | 59 | A |" in text


def test_runs_of_two_machines_are_two_runs(tmp_path) -> None:
    """Without GPU UUIDs (a CPU run), the same command, date and commit on two hosts are two runs,
    not repeats of one."""
    page = _page(tmp_path, "results/tp/cartpole-*.json")
    for name, host in [("cartpole-1.json", "a"), ("cartpole-2.json", "b")]:
        bench = json.loads((tmp_path / "results" / "tp" / name).read_text())
        bench["machine"] = {**MACHINE, "gpu_uuids": [], "gpu": None, "host": host, "gpu_count": 0}
        bench["machine"] |= {"cpu": "AMD EPYC", "cpu_count": 2}
        bench["device"] = "cpu"
        (tmp_path / "results" / "tp" / name).write_text(json.dumps(bench))
    assert main(["bench", "docs", str(page)]) == 0
    text = page.read_text()
    assert "| cartpole | cpu | 4,096 | 3.62 M |" in text and "| cartpole | cpu | 4,096 | 3.61 M |" in text
    assert "2026-11-29, commit abc1234, CPU AMD EPYC (2 cores); [raw results](results/tp/)" in text


def test_the_docs_show_what_their_raw_results_give(capsys) -> None:
    assert (ROOT / "docs" / "benchmarks.md").read_text().count("<!-- bench-table end -->") >= 5, "a table per topic"
    assert main(["bench", "docs", str(ROOT / "docs"), "--check"]) == 0, "run `phalanx bench docs` after adding results"
    checked = capsys.readouterr().out
    assert "benchmarks.md" in checked and "tasks/arms.md" in checked, "every page with a table, found in docs/"


def test_a_tools_bench_names_its_command_as_run_without_where_it_wrote() -> None:
    """`tool_bench`: the command quoted as a shell reruns it, --out and its file left out."""
    from phalanx.bench.machine import tool_bench

    argv = ["anymal-stones-qp", "--out", "a/bench.json", "--label", "over the MPC", "--out=b.json", "--seed", "1"]
    bench = tool_bench("stones", "anymal-stones-qp", "stones_eval.py", argv, "cpu", results=[])
    assert bench["command"] == "python tools/stones_eval.py anymal-stones-qp --label 'over the MPC' --seed 1"
    assert bench["kind"] == "stones" and bench["results"] == [] and {"date", "machine", "device"} <= set(bench)


def test_a_qp_table_from_tools_qp_speed(tmp_path) -> None:
    """tools/qp_speed.py --out, run on the CPU: a row per solver and step count, a column per batch."""
    raw = tmp_path / "results" / "qp"
    command = [sys.executable, str(ROOT / "tools" / "qp_speed.py"), "--device", "cpu", "--batches", "16,64"]
    command += ["--iterations", "25", "--backends", "torch", "--out", str(raw / "bench.json")]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    text = _built(tmp_path, "qp: results/qp")
    batches = "M QPs/s, 1 at once | M QPs/s, 16 at once | M QPs/s, 64 at once"  # 1: proxsuite, one at a time
    assert f"| solver | ADMM steps | {batches} | largest primal residual |" in text, text
    (torch_row,) = [line.split(" | ") for line in text.splitlines() if line.startswith("| torch steps | 25 |")]
    assert torch_row[2] == "-" and float(torch_row[3]) > 0 and torch_row[-2:] == ["0", "A |"]
    assert float(torch_row[-4]) < 0.01, "25 warm-started steps hold the forces of a 50 kg robot to mN"
    assert re.search(r"\| proxsuite \S+ \(dense, eps_abs 1e-6, one core\) \| - \| [0-9.]+ \| - \| - \|", text)
    assert "- A: `python tools/qp_speed.py --device cpu --batches 16,64 --iterations 25 --backends torch`" in text


def test_a_controller_table_from_tools_quadruped_controller_speed(tmp_path) -> None:
    """The rows tools/quadruped_controller_speed.py --out writes (it needs CUDA: written here as it
    writes them): a row per body controller, solver and step count, a column per batch."""
    from phalanx.bench.machine import tool_bench

    rows = [
        {"batch": n, "qp_iterations": 25, "qp_backend": "warp", "body_controller": "qp"}
        | {"controller_steps_per_s": rate, "qp_share": share, "controller_step_ms": 1.0, "body_controller_ms": 0.5}
        for n, rate, share in ((1024, 1.57e6, 0.78), (4096, 5.57e6, 0.77))
    ]
    rows.append(
        rows[0] | {"body_controller": "mpc", "qp_backend": "torch", "controller_steps_per_s": 2e5, "qp_share": 0.9}
    )
    argv = ["--batches", "1024,4096", "--qp-backend", "warp", "--out", "x.json"]
    bench = tool_bench(
        "controller", "quadruped controller", "quadruped_controller_speed.py", argv, "cuda", results=rows
    )
    raw = tmp_path / "results" / "controller"
    raw.mkdir(parents=True)
    (raw / "bench.json").write_text(json.dumps(bench))
    text = _built(tmp_path, "controller: results/controller")
    assert "| body controller | solver | ADMM steps | M steps/s, 1,024 robots (body's share) |" in text, text
    assert "| force QP | warp | 25 | 1.57 (78%) | 5.57 (77%) | A |" in text
    assert "| MPC | torch | 25 | 0.20 (90%) | - | A |" in text
    assert "- A: `python tools/quadruped_controller_speed.py --batches 1024,4096 --qp-backend warp`" in text


def test_a_pipeline_table_from_tools_qp_pipeline(tmp_path) -> None:
    """tools/qp_pipeline.py --out, run on the CPU (nothing captured there): a row per task."""
    raw = tmp_path / "results" / "pipeline"
    command = [sys.executable, str(ROOT / "tools" / "qp_pipeline.py"), "anymal-qp", "--device", "cpu"]
    command += [
        "--num-envs",
        "4",
        "--steps",
        "2",
        "--warmup",
        "1",
        "--host-steps",
        "1",
        "--out",
        str(raw / "bench.json"),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    text = _built(tmp_path, "pipeline: results/pipeline")
    assert "| task | envs | captured, env steps/s | uncaptured | host | QP's share of the captured step |" in text
    row = r"\| anymal-qp \| 4 \| [0-9,]+ \([0-9.]+ ms\) \| [0-9,]+ \([0-9.]+ ms\) \| [0-9,]+ \([0-9.]+ ms\) \| "
    row += r"[0-9.]+ ms, [0-9]+ % \| [0-9]+ us \| \*\*[0-9.]+x\*\* \| A \|"
    assert re.search(row, text), text
    assert "- A: `python tools/qp_pipeline.py anymal-qp --device cpu --num-envs 4 --steps 2 --warmup 1" in text


def test_a_viewer_table_from_tools_viewer_overhead(tmp_path) -> None:
    """tools/viewer_overhead.py --out over runs named TASK-MODE-N: a row per task, each mode's median
    fps_total (iterations from --skip on) beside the plain runs' with its change."""
    import gzip

    raw = tmp_path / "results" / "viewer"
    raw.mkdir(parents=True)
    for name, fps in [("cartpole-plain-1", 4e6), ("cartpole-plain-2", 2e6), ("cartpole-viewer-1", 2.7e6)]:
        rows = [{"iteration": i, "fps_total": 1.0 if i < 2 else fps} for i in range(5)]  # the first 2 compile
        with gzip.open(raw / f"{name}.metrics.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    command = [sys.executable, str(ROOT / "tools" / "viewer_overhead.py"), str(raw), "--skip", "2"]
    subprocess.run([*command, "--out", str(raw / "bench.json")], check=True, capture_output=True, timeout=120)
    text = _built(tmp_path, "viewer: results/viewer")
    assert "| task | plain runs | fps_total, plain | with --viewer | change | with --viewer and a page open |" in text
    assert "| cartpole | 2 | 4.000, 2.000 M | 2.700 M | -10.0 % | - | - | A |" in text, text
    (raw / "cartpole-live-1.metrics.jsonl.gz").write_bytes((raw / "cartpole-plain-1.metrics.jsonl.gz").read_bytes())
    bad = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "cartpole-live-1.metrics.jsonl.gz names mode 'live'" in bad.stderr.splitlines()[-1]


@pytest.mark.parametrize("task", ["anymal-qp", "anymal-stones-qp"])
def test_a_classic_table_from_tools_classic_pipeline(task: str, tmp_path) -> None:
    """tools/classic_pipeline.py --out on the CPU: the task's robots in MuJoCo C (on their tiles of
    the stones: their terrain in the model, the footholds searched and the height scan read from
    its height map) over 2 worker processes, the QP per robot with proxsuite, the policy in the
    main process; they still stand at the end, and the table gives the rate and its parts."""
    pytest.importorskip("proxsuite")
    raw = tmp_path / "results" / "classic"
    command = [sys.executable, str(ROOT / "tools" / "classic_pipeline.py"), task, "--num-envs", "4"]
    command += ["--workers", "2", "--steps", "10", "--policy-device", "cpu", "--out", str(raw / "bench.json")]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    (row,) = json.loads((raw / "bench.json").read_text())["results"]
    assert row["base_height_min"] > 0.45, "the heuristic holds the robots up (0.6 m above their tiles standing)"
    text = _built(tmp_path, "classic: results/classic")
    columns = "| task | envs | workers (cores) | policy on | env steps/s | policy, copies | workers |"
    assert columns in text and re.search(rf"\| {task} \| 4 \| 2 of \d+ \| cpu \| [0-9,]+ \([0-9.]+ ms\) \|", text)
    bad = subprocess.run([*command[:-2], "--workers", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--workers: must be >= 1, got 0" in bad.stderr.splitlines()[-1]


def test_the_classic_pipeline_refuses_a_task_without_the_quadruped_controller() -> None:
    command = [sys.executable, str(ROOT / "tools" / "classic_pipeline.py"), "anymal-flat", "--num-envs", "4"]
    bad = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2, bad.stderr
    assert "task: anymal-flat's actions do not drive quadruped_control" in bad.stderr.splitlines()[-1]


def test_a_scaling_model_table_from_tools_scaling_model(tmp_path) -> None:
    """tools/scaling_model.py --out on a toy sweep (20 ms at 1,024 envs, 40 ms at 4,096) and two
    all-reduces of 1,000 floats per iteration, against the model's terms by hand: inside a node
    t = a + 2(k-1)/k S/b, across nodes 2 a_net per tree level + 2(m-1)/m (S/g)/b_net."""
    sweep, counts = tmp_path / "sweep.json", tmp_path / "counts.json"
    points = [{"num_envs": n, "iteration_s": t, "valid": True} for n, t in ((1024, 0.02), (4096, 0.04))]
    sweep.write_text(json.dumps({"results": points}))
    calls = [{"kind": "all_reduce", "numel": 1000, "dtype": "torch.float32", "calls": 2}]
    counts.write_text(json.dumps({"task": "toy", "per_iteration": calls}))
    raw = tmp_path / "results" / "model"
    command = [sys.executable, str(ROOT / "tools" / "scaling_model.py"), "--sweep", str(sweep), "--collectives"]
    command += [str(counts), "--envs", "1024", "--total-envs", "4096", "--gpus", "1,2,16", "--node-gpus", "8"]
    command += ["--a-us", "10", "--b-gbs", "100", "--a-net-us", "5", "--b-net-gbs", "10"]
    subprocess.run([*command, "--out", str(raw / "bench.json")], check=True, capture_output=True, timeout=120)
    one, two, sixteen = json.loads((raw / "bench.json").read_text())["results"]
    assert one["collectives_ms"] == 0 and one["weak_efficiency"] == 1 and one["strong_efficiency"] == 1
    c2 = 2 * (10e-6 + 2 * (1 / 2) * 4000 / 100e9)
    assert two["collectives_ms"] == pytest.approx(c2 * 1e3)
    assert two["weak_efficiency"] == pytest.approx(0.02 / (0.02 + c2))
    t1_2048 = 0.02 * 2**0.5  # log-log between the sweep's points
    assert two["strong_efficiency"] == pytest.approx(0.04 / (2 * (t1_2048 + c2)))
    c16 = 2 * ((10e-6 + 2 * (7 / 8) * 4000 / 100e9) + (2 * 5e-6 + 2 * (1 / 2) * (4000 / 8) / 10e9))
    assert sixteen["collectives_ms"] == pytest.approx(c16 * 1e3)
    text = _built(tmp_path, "scaling-model: results/model")
    assert "| task | GPUs | C + J ms | weak: envs per GPU | weak: ms | weak efficiency (measured) |" in text, text
    assert f"| toy | 2 | {c2 * 1e3:.2f} + 0.00 | 1,024 | {(0.02 + c2) * 1e3:.1f} | 100% | 2,048 |" in text
    assert "- A: `python tools/scaling_model.py --sweep" in text


def test_a_students_table_from_tools_student_runs(tmp_path, capsys) -> None:
    """tools/student_runs.py --out over students' runs in both layouts (as distill_gpu.sh leaves them,
    as docs/results keep them), read back with the GPUs, commit and date they ran on: each one's
    gradient steps per iteration from its config, its rates, and its trailing means after a number
    of gradient steps and at its end, against the figures by hand; a failed student is skipped."""
    import gzip

    root = tmp_path / "distill"
    root.mkdir()
    for name, epochs, successes in [("a", 2, [0.0, 2.0, 4.0, 6.0]), ("b", 1, [1.0, None, 3.0, 5.0])]:
        config = {"task": "cartpole-rgb", "device": "cuda:0", "num_envs": 64}
        config["algo"] = {"num_learning_epochs": epochs, "num_mini_batches": 2}
        rows = [
            {"iteration": i, "time_s": 10.0 * (i + 1), "fps_total": 1000.0 * (i + 1), "loss/distill": 0.5 - 0.1 * i}
            | ({} if s is None else {"metrics/consecutive_successes": s})
            for i, s in enumerate(successes)
        ]
        lines = "".join(json.dumps(row) + "\n" for row in rows)
        if name == "a":  # as distill_gpu.sh leaves it
            (root / name).mkdir()
            (root / name / "config.json").write_text(json.dumps(config))
            (root / name / "metrics.jsonl").write_text(lines)
        else:  # as docs/results keep it
            (root / f"{name}.config.json").write_text(json.dumps(config))
            with gzip.open(root / f"{name}.metrics.jsonl.gz", "wt") as file:
                file.write(lines)
    (root / "gpu.txt").write_text("name, uuid, driver_version\nNVIDIA H200, GPU-6c80ba26-6496, 580.159.04\n")
    raw = tmp_path / "results" / "students"
    command = [sys.executable, str(ROOT / "tools" / "student_runs.py"), str(root), "a:|b:--num-envs 64|c:"]
    command += ["--skip", "1", "--window", "2", "--gpus", str(root / "gpu.txt"), "--commit", "abc1234"]
    command += ["--date", "2026-12-01"]
    done = subprocess.run([*command, "--out", str(raw / "bench.json")], check=True, capture_output=True, text=True)
    assert "c: skipped, no config and metrics in" in done.stdout
    text = _built(tmp_path, "students: results/students steps=8")
    columns = "| student | flags | envs | gradient steps per iteration | gradient steps/s | fps total | at 8 steps:"
    assert columns in text, text
    # a: 4 steps an iteration; 8 after iteration 1 (20 s): means of 0 and 2, of 0.5 and 0.4; rates from iteration 1
    assert "| a | none | 64 | 4 | 0.4 | 3.0 k | 20 | 1.00 / 0.450 | 40 | 5.00 / 0.250 | A |" in text
    # b: 2 steps an iteration; 8 after iteration 3, whose window (iterations 2, 3) is whole; after
    # iteration 2 (6 steps) the window holds the missing value, left out: its mean is 3
    assert "| b | `--num-envs 64` | 64 | 2 | 0.2 | 3.0 k | 40 | 4.00 / 0.250 | 40 | 4.00 / 0.250 | A |" in text
    bench = json.loads((raw / "bench.json").read_text())
    assert [point[:3] for point in bench["results"][1]["curve"]] == [
        [2, 10.0, 1.0],
        [4, 20.0, 1.0],
        [6, 30.0, 3.0],
        [8, 40.0, 4.0],
    ]
    note = r"- A: `python tools/student_runs.py .* --date 2026-12-01`; 2026-12-01, commit abc1234, 1 x NVIDIA H200 "
    assert re.search(note + r"\(GPU-6c80ba26", text), text
    bad = subprocess.run([*command[:3], "c:"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "students: none of 'c:' has a config and metrics in" in bad.stderr.splitlines()[-1]
    bad = subprocess.run([*command[:3], "a:", "--gpus", str(root / "gpu.txt")], capture_output=True, text=True)
    assert bad.returncode == 2 and "--gpus, --commit and --date: give all three" in bad.stderr.splitlines()[-1]
    page = tmp_path / "benchmarks.md"
    page.write_text("<!-- bench-table students: results/students steps=0 -->\n<!-- bench-table end -->\n")
    assert main(["bench", "docs", str(page)]) == 2
    assert "a students table's steps is a whole number >= 1, got steps='0'" in capsys.readouterr().err
