"""`phalanx bench startup` on the CPU: a cold start compiles every Warp module into an empty
cache, the warm start after it compiles none and loads the same ones from the cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from phalanx.bench.startup import PHASES


def _bench(*flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "phalanx", "bench", "startup", "cartpole", "--device", "cpu", *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_cold_then_warm_start(tmp_path: Path) -> None:
    keep = tmp_path / "cache" / "keep.txt"  # a cold run empties only the cache directories it uses
    keep.parent.mkdir()
    keep.write_text("mine")
    run = _bench("--num-envs", "16", "--cache-dir", str(tmp_path / "cache"), "--run-dir", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert keep.read_text() == "mine"
    bench = json.loads((tmp_path / "run" / "bench.json").read_text())
    cold, warm = bench["results"]
    assert (cold["run"], warm["run"]) == ("cold", "warm") and cold["valid"] and warm["valid"]

    def loads(result: dict, key: str) -> int:
        return sum(result["warp"][phase][key] for phase in PHASES)

    assert loads(cold, "compiled") > 0 and loads(cold, "cached") == 0
    assert loads(warm, "compiled") == 0 and loads(warm, "cached") == loads(cold, "compiled")
    for result in (cold, warm):
        phases = sum(result["phases_s"][p] for p in PHASES)
        assert abs(phases - result["to_first_iteration_s"]) < 1e-6
        assert 0 < result["to_first_iteration_s"] <= result["process_wall_s"]
    assert warm["phases_s"]["first_env_step"] < cold["phases_s"]["first_env_step"]
    for result in (cold, warm):  # the sampled main thread accounts for the time to the first iteration
        sampled = sum(sum(result["main_thread_s"][p].values()) for p in PHASES if p != "import")
        assert abs(sampled - (result["to_first_iteration_s"] - result["phases_s"]["import"])) < 1.0
    waited = sum(cold["main_thread_s"][p].get("waiting for Warp", 0.0) for p in PHASES)
    assert waited > 0 and sum(warm["main_thread_s"][p].get("waiting for Warp", 0.0) for p in PHASES) < waited
    wheres = {row[3] for row in cold["samples"]} - {""}  # the innermost phalanx function, as module.function
    assert wheres and all("/" not in where and ".py" not in where for where in wheres), wheres
    inner = {row[4] for row in cold["samples"]} - {""}  # the innermost frame, as file:function ("": none)
    assert any(i.startswith("phalanx/") and ".py:" in i for i in inner) and all(":" in i for i in inner), inner
    assert not any(i.startswith(("site-packages/", "dist-packages/", "/")) and "-packages/" in i for i in inner), inner
    timeline = [m for p in PHASES for m in cold["warp"][p]["timeline"]]
    assert len(timeline) == loads(cold, "compiled")
    assert all(0 < start < end <= cold["to_first_iteration_s"] for _, how, start, end in timeline)
    for result in (cold, warm):  # the same samples, by what the main thread did
        parts = result["main_thread_split_s"]
        assert abs(sum(parts.values()) - result["to_first_iteration_s"]) < 0.3, parts
        assert parts["imports"] > 0 and parts["torch.compile's imports"] == 0  # cartpole compiles nothing
    report = (tmp_path / "run" / "report.md").read_text()
    assert "launch -> first iteration" in report and "imports while building" in report


def test_unknown_run_kind_is_refused(tmp_path: Path) -> None:
    run = _bench("--runs", "cold,hot", "--run-dir", str(tmp_path / "run"))
    assert run.returncode == 2
    assert "--runs: expected comma-separated 'cold' and 'warm', got 'cold,hot'" in run.stderr


def test_repeated_runs_get_their_median() -> None:
    """`--runs cold,warm,warm,warm`: each run's row, then the repeated kind's median and range
    (the single cold run gets none)."""
    from phalanx.bench.startup import table

    def result(run: str, total: float) -> dict:
        phases = dict.fromkeys(PHASES, total / len(PHASES)) | {"second_iteration": 0.1, "steady_iteration": 0.01}
        warp = {p: {"compiled": 0, "cached": 1, "compile_s": 0.0, "cached_load_s": 0.1} for p in PHASES}
        return {"run": run, "valid": True, "to_first_iteration_s": total, "phases_s": phases, "warp": warp}

    results = [result("cold", 30.0), result("warm", 12.0), result("warm", 10.0), result("warm", 15.0)]
    for k, r in enumerate(results[2:], 2):
        r["name"] = f"warm-{k}"  # as `startup.run` names the repeats (and their logs)
    rows = [line for line in table(results).splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| cold", "| warm", "| warm-2", "| warm-3", "| warm, median of 3"]
    assert rows[-1].split(" | ")[1] == "**12.0 s** (10.0-15.0)"
    assert rows[-1].split(" | ")[2] == f"{12.0 / len(PHASES):.1f}"


def test_a_warm_run_that_compiles_triton_kernels_is_called_out() -> None:
    """Time the main thread spent in Triton's compiler: none is expected warm, where inductor's
    cache holds the kernels; a warm run with some gets a sentence under the table."""
    from phalanx.bench.startup import table, triton_compiling_s

    def result(run: str, compiler_samples: int) -> dict:
        frames = ["triton/backends/nvidia/compiler.py:make_ttgir"] * compiler_samples + ["phalanx/rl/ppo.py:update"] * 3
        samples = [[0.1 * (k + 1), "torch.compile", 1.0, "", inner] for k, inner in enumerate(frames)]
        phases = dict.fromkeys(PHASES, 0.1) | {"second_iteration": 0.1, "steady_iteration": 0.01}
        warp = {p: {"compiled": 0, "cached": 1, "compile_s": 0.0, "cached_load_s": 0.1, "timeline": []} for p in PHASES}
        main_thread = {p: {"torch.compile": 0.1} for p in PHASES}
        return {
            "run": run, "valid": True, "to_first_iteration_s": 10.0, "phases_s": phases, "warp": warp,
            "main_thread_s": main_thread, "samples": samples,
        }  # fmt: skip

    cold, warm = result("cold", 20), result("warm", 3)
    assert triton_compiling_s(cold) == 1.9 and triton_compiling_s(warm) == 0.2  # the first sample counts none
    assert "A warm run spent 0.2 s in Triton's compiler" in table([cold, warm])
    assert "Triton's compiler:" not in table([cold, result("warm", 2)])  # 0.1 s: below the threshold
    launching = result("warm", 0)  # a kernel launch through Triton's driver is not compiling
    launching["samples"][1][4] = "triton/backends/nvidia/driver.py:__call__"
    assert triton_compiling_s(launching) == 0.0
    for row in launching["samples"]:  # samples written before they named the innermost frame
        del row[4]
    assert triton_compiling_s(launching) is None and "| - |" in table([launching])


def test_the_main_thread_is_split_by_what_it_did() -> None:
    """Each sample counts for the time since the one before, under the part its phase, state
    and phalanx function name; samples past the first iteration count for none."""
    from phalanx.bench.startup_split import PARTS, split, split_table

    samples = [  # t, state, busy cores, innermost phalanx function, innermost frame
        [0.5, "other", 1.0, "", "torch/__init__.py:<module>"],
        [1.0, "Warp", 1.0, "sim.simulator.<module>", "ast.py:parse"],
        [1.5, "torch.compile", 1.0, "compiling.import_compiler", "sympy/core/expr.py:<module>"],
        [2.0, "Warp", 1.0, "sim.simulator._substeps", "warp/_src/context.py:hash_adjoint"],
        [2.5, "waiting for Warp", 1.0, "sim.warp_compile.wait", "threading.py:wait"],
        [3.0, "torch.compile", 1.0, "envs.task_env._step", "torch/_dynamo/utils.py:run_node"],
        [3.5, "other", 1.0, "envs.task_env.reset", "phalanx/envs/task_env.py:reset"],
        [4.0, "torch.compile", 1.0, "rl.ppo._minibatch", "torch/_dynamo/utils.py:run_node"],
        [4.5, "waiting for the update's compile", 1.0, "rl.update_compile.finish", "subprocess.py:_try_wait"],
        [5.5, "other", 1.0, "rl.ppo.update", "torch/cuda/__init__.py:synchronize"],
    ]
    phases = {"import": 0.6, "model_build": 2.9, "trainer_init": 0.0, "first_reset": 0.0, "first_env_step": 0.0}
    result = {"run": "warm", "valid": True, "to_first_iteration_s": 5.0, "samples": samples}
    result["phases_s"] = phases | {"first_iteration": 1.5, "second_iteration": 0.3}
    parts = split(result)
    assert list(parts) == list(PARTS) and all(value == 0.5 for value in parts.values()), parts
    assert "| warm | 5.0 | 0.5 |" in split_table([result])
    assert split_table([result | {"samples": [row[:3] for row in samples]}]) == ""  # nothing to sort
