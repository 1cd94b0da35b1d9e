"""phalanx bench on the CPU: each subcommand end to end, the schema and the consistency of figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from phalanx.cli import main

QUICK = ["--device", "cpu", "--iterations", "2", "--warmup", "1"]


@pytest.fixture(scope="module")
def throughput_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("throughput")
    args = ["bench", "throughput", "cartpole", "--num-envs", "32,64", *QUICK, "--telemetry", "--profile", "1"]
    args += ["--run-dir", str(run_dir)]
    assert main(args) == 0
    return run_dir


def test_throughput_writes_a_consistent_bench_json(throughput_run: Path) -> None:
    bench = json.loads((throughput_run / "bench.json").read_text())
    assert bench["kind"] == "throughput" and bench["task"] == "cartpole" and bench["device"] == "cpu"
    assert bench["command"].startswith("phalanx bench throughput cartpole")
    assert {"host", "cpu", "gpu", "gpu_count", "driver", "versions", "commit"} <= set(bench["machine"])
    assert [r["num_envs"] for r in bench["results"]] == [32, 64]
    for r in bench["results"]:
        assert r["valid"]
        assert 0 < r["fps_total"] <= r["fps_step_inference"] <= r["fps_step"]
        assert r["physics_limit_env_steps_per_s"] > 0 and r["ratio_step_to_limit"] > 0
        phases = r["phases_s"]
        assert set(phases) == {"physics", "render", "obs_reward_reset", "policy_inference", "ppo_update"}
        assert phases["render"] == 0 and r["render_frames_per_s"] == []  # no camera
        assert r["observation_spec"] == {"policy": [4]}
        assert all(v >= 0 for v in phases.values())
        assert sum(phases.values()) == pytest.approx(r["iteration_s"], rel=1e-6)
        assert set(r["startup_s"]) == {"import", "model_build", "first_iteration", "warmup_and_capture"}
        assert all(v >= 0 for v in r["startup_s"].values()) and r["memory_bytes"] > 0
    assert r["encoder_s"] == 0.0, "no images, no encoder"
    report = (throughput_run / "report.md").read_text()
    assert "| 32 |" in report and "| 64 |" in report and "phases.png" in report
    assert (throughput_run / "phases.png").stat().st_size > 1000


def test_throughput_times_the_cameras_renders_of_the_task_as_changed(tmp_path: Path) -> None:
    image = "--env.observations.image.rgb.params"
    args = ["bench", "throughput", "cartpole-rgb", "--num-envs", "8", *QUICK, "--run-dir", str(tmp_path)]
    args += [f"--train-args={image}.width 48 {image}.height 40 {image}.every 2"]
    assert main(args) == 0
    (r,) = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert r["observation_spec"]["image"] == [40, 48, 6], "two stacked 48x40 RGB frames"
    assert len(r["render_frames_per_s"]) == 1 and r["render_frames_per_s"][0] > 0, "the camera's renders were timed"
    # Physics and the renders are timed apart from the step they share: the render phase is the
    # renders' time, capped by what physics leaves of the step. On a busy CPU physics timed alone
    # can fill the whole step, which leaves nothing to the render phase.
    phases, step_s = r["phases_s"], r["num_envs"] * r["num_steps_per_env"] / r["fps_step"]
    assert phases["render"] > 0 or phases["physics"] == pytest.approx(step_s, rel=1e-9)
    assert sum(r["phases_s"].values()) == pytest.approx(r["iteration_s"], rel=1e-6)
    assert r["encoder_s"] > 0, "the policy's image encoder, timed apart"
    assert "| render |" in (tmp_path / "report.md").read_text()
    assert "| of it, image encoders |" in (tmp_path / "report.md").read_text()


def test_profile_trace_names_the_phases(throughput_run: Path) -> None:
    trace = json.loads((throughput_run / "trace-64.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {"rollout", "env_step", "ppo_update"} <= names


def test_telemetry_without_gpu_records_the_cpu_and_says_so(throughput_run: Path) -> None:
    bench = json.loads((throughput_run / "bench.json").read_text())
    assert bench["telemetry"]["note"] == "no GPU visible through NVML: CPU telemetry only"
    assert bench["telemetry"]["gpus"] == [] and bench["telemetry"]["samples"] > 0
    with open(throughput_run / "cpu_metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"timestamp", "thread", "cpu_pct"} == set(rows[0])
    assert any(r["thread"] == "process" for r in rows)
    with open(throughput_run / "gpu_metrics.csv") as f:
        assert next(csv.reader(f))[:3] == ["timestamp", "gpu", "utilization_pct"]


def test_env_sweep_reports_invalid_settings_and_plots(tmp_path: Path) -> None:
    # 5 envs x 3 steps = 15 transitions cannot be split into 4 minibatches; 8 x 3 = 24 can.
    args = ["bench", "envs", "cartpole", "--num-envs", "5,8,16", "--num-steps-per-env", "3", *QUICK]
    assert main([*args, "--run-dir", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert [r["valid"] for r in results] == [False, True, True]
    assert "15 is not divisible into 4 minibatches" in results[0]["reason"]
    assert (tmp_path / "envs.png").is_file() and "invalid: num_envs" in (tmp_path / "report.md").read_text()


def test_report_rebuilds_and_compares(throughput_run: Path, tmp_path: Path) -> None:
    (throughput_run / "report.md").unlink()
    assert main(["bench", "report", str(throughput_run)]) == 0
    assert (throughput_run / "report.md").is_file()
    out = tmp_path / "comparison"
    assert main(["bench", "report", str(throughput_run), str(throughput_run), "--out", str(out)]) == 0
    table = (out / "report.md").read_text()
    assert table.count("| cpu | none | cartpole |") == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench"], "expected one of throughput, envs, scaling, startup, compare, learn, report, docs, got nothing"),
        (["bench", "throughput", "cartpole", "--num-envs", "4096,x"], "--num-envs: expected comma-separated"),
        (["bench", "report", "/nonexistent"], "no bench.json in /nonexistent"),
        (["bench", "compare", "cartpole", "--trainers", "phalanx,sb4"], "--trainers: got 'phalanx,sb4'; allowed"),
        (["bench", "compare", "anymal-nav"], "anymal-nav has no default learning threshold: give --metric"),
        (
            ["bench", "compare", "cartpole", "--gpus", "1,0"],
            "--gpus: expected comma-separated positive integers, got '1,0'",
        ),
        (
            ["bench", "compare", "cartpole", "--stall-timeout-s", "0"],
            "--stall-timeout-s: must be a finite number > 0 s, got 0.0",
        ),
        (
            ["bench", "scaling", "cartpole", "--gpus", "1,x"],
            "--gpus: expected comma-separated positive integers, got '1,x'",
        ),
    ],
)
def test_bench_bad_input(args: list[str], message: str, capsys) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_bench_compare_trains_each_trainer_in_its_own_process(tmp_path: Path) -> None:
    args = ["bench", "compare", "cartpole", "--trainers", "phalanx,rsl_rl,sb3", "--num-envs", "16", "--device", "cpu"]
    args += ["--iterations", "3", "--warmup", "1", "--no-warm-caches", "--threshold", "1", "--run-dir", str(tmp_path)]
    assert main([*args, "--gpus", "1,2"]) == 0
    bench = json.loads((tmp_path / "bench.json").read_text())
    runs = [(r["trainer"], r["gpus"]) for r in bench["results"]]
    assert runs == [("phalanx", 1), ("rsl_rl", 1), ("sb3", 1), ("phalanx", 2), ("rsl_rl", 2)]  # sb3: one device
    *valid, refused = bench["results"]
    for r in valid:  # phalanx on 2 ranks: two gloo processes
        assert r["valid"] and 0 < r["fps_total"] <= r["fps_step_inference"] <= r["fps_step"]
        assert 0 < r["startup_s"] <= r["to_threshold_from_launch_s"]  # every episode is longer than 1 step
        assert r["to_threshold_iteration"] == 0 and len(r["curve"]) == 3
    assert not refused["valid"] and "runs one process per CUDA GPU" in refused["reason"]
    assert json.loads((tmp_path / "rsl_rl" / "run" / "config.json").read_text())["trainer"] == "rsl_rl"
    assert json.loads((tmp_path / "phalanx-2gpus" / "run" / "metrics.jsonl").read_text().splitlines()[-1])[
        "frames"
    ] == (2 * 3 * 16 * 16)
    report = (tmp_path / "report.md").read_text()
    assert "| rsl_rl | 1 |" in report and "| phalanx | 2 |" in report and "speed-up" in report
    assert (tmp_path / "compare.png").is_file()


def test_bench_compare_with_every_trainer_left_out_still_writes_its_report(tmp_path: Path) -> None:
    args = ["bench", "compare", "cartpole", "--trainers", "sb3", "--gpus", "2", "--device", "cpu", "--no-warm-caches"]
    assert main([*args, "--run-dir", str(tmp_path)]) == 0  # Stable-Baselines3 trains on one device only
    assert json.loads((tmp_path / "bench.json").read_text())["results"] == []
    assert (tmp_path / "report.md").is_file()


def test_bench_compare_warms_the_caches_on_each_gpu_count(tmp_path: Path, monkeypatch) -> None:
    """A job on two GPUs compiles graphs a one-GPU job does not (the update's all-reduce): each GPU
    count gets its own warm-up, before any trainer is timed."""
    import sys

    from phalanx.bench import trainers

    calls = []

    def record(cfg, trainer, device, iterations, run_dir, gpus=1) -> list[str]:
        calls.append((trainer, iterations, gpus, run_dir.name))
        return [sys.executable, "-c", "pass"]

    monkeypatch.setattr(trainers, "_train_command", record)
    args = ["bench", "compare", "cartpole", "--trainers", "rsl_rl", "--gpus", "1,2", "--device", "cpu"]
    assert main([*args, "--iterations", "3", "--run-dir", str(tmp_path)]) == 0
    assert calls == [
        ("phalanx", 1, 1, "warm-up"),
        ("phalanx", 1, 2, "warm-up-2gpus"),
        ("rsl_rl", 3, 1, "run"),
        ("rsl_rl", 3, 2, "run"),
    ]
    assert (tmp_path / "warm-up.log").is_file() and (tmp_path / "warm-up-2gpus.log").is_file()


def test_a_trainer_that_stops_writing_rows_is_stopped_and_reported(tmp_path: Path, monkeypatch) -> None:
    """A trainer whose job writes its first rows, then hangs (as a torchrun rank can, waiting in a
    collective for a peer that left) is stopped `stall_timeout_s` after its last row, long before
    `job_timeout_s`."""
    import sys
    import time

    from phalanx.bench import trainers
    from phalanx.bench.options import CompareCfg

    def two_rows_then_hang(cfg, trainer, device, iterations, run_dir, gpus=1) -> list[str]:
        rows = "\n".join(json.dumps({"iteration": i}) for i in range(2))
        script = f"import pathlib, time; p = pathlib.Path({str(run_dir)!r}); p.mkdir(parents=True)\n"
        script += f"(p / 'metrics.jsonl').write_text({rows + chr(10)!r}); time.sleep(600)"
        return [sys.executable, "-c", script]

    monkeypatch.setattr(trainers, "_train_command", two_rows_then_hang)
    cfg = CompareCfg(task="cartpole", iterations=5, stall_timeout_s=1.0, metric="mean_reward", threshold=1.0)
    start = time.time()
    r = trainers.run_trainer(cfg, "skrl", "cpu", tmp_path, gpus=2)
    assert not r["valid"] and r["reason"] == "stalled: no metrics row for 1 s after iteration 1"
    assert time.time() - start < 60  # stop_job: SIGTERM, which the sleeping script does not outlive


def test_weak_scaling_with_two_gloo_processes(tmp_path: Path) -> None:
    args = ["bench", "scaling", "cartpole", "--mode", "weak", "--gpus", "1,2", "--num-envs", "16", "--device", "cpu"]
    args += ["--train-args=--num-steps-per-env 8"]
    assert main([*args, "--iterations", "2", "--warmup", "1", "--run-dir", str(tmp_path)]) == 0
    bench = json.loads((tmp_path / "bench.json").read_text())
    one, two = bench["results"]
    config = json.loads((tmp_path / "gpus-2" / "config.json").read_text())
    assert config["num_steps_per_env"] == 8 and config["world_size"] == 2
    assert one["valid"] and two["valid"] and two["envs_per_rank"] == 16 and two["total_envs"] == 32
    for r in (one, two):
        assert 0 < r["fps_total"] <= r["fps_step_inference"] <= r["fps_step"] and r["epoch_s"] > 0
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0
    assert two["efficiency"] == pytest.approx(two["fps_total"] / (2 * one["fps_total"]))
    report = (tmp_path / "report.md").read_text()
    assert "| GPUs | envs per GPU | FPS step |" in report and (tmp_path / "scaling.png").is_file()


def test_a_scaling_job_that_outlives_its_timeout_is_stopped_and_reported(tmp_path: Path) -> None:
    args = ["bench", "scaling", "cartpole", "--gpus", "2", "--num-envs", "16", "--device", "cpu"]
    assert main([*args, "--job-timeout-s", "2", "--run-dir", str(tmp_path)]) == 0
    (row,) = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert not row["valid"] and row["reason"].startswith("timed out after 2 s")
    assert (tmp_path / "gpus-2" / "job.log").is_file()


def test_strong_scaling_says_when_envs_do_not_split() -> None:
    from phalanx.bench.scaling import envs_per_rank

    assert envs_per_rank("strong", 4096, 4) == 1024 and envs_per_rank("weak", 4096, 4) == 4096
    assert envs_per_rank("strong", 33, 2) is None


def test_the_commit_says_when_the_measured_code_is_not_the_commits(tmp_path: Path, monkeypatch) -> None:
    import subprocess

    from phalanx.bench.machine import git_commit

    monkeypatch.delenv("PHALANX_COMMIT", raising=False)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "step.py").write_text("fast = True\n")
    subprocess.run([*git, "add", "step.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    short = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "notes.txt").write_text("untracked files do not count\n")
    assert git_commit(tmp_path) == short
    (tmp_path / "step.py").write_text("fast = False\n")
    assert git_commit(tmp_path) == short + "+dirty"
    monkeypatch.setenv("PHALANX_COMMIT", "abc1234")
    assert git_commit(tmp_path) == "abc1234"
    monkeypatch.delenv("PHALANX_COMMIT")
    assert git_commit(tmp_path.parent / "no-checkout-here") == "unknown"


def test_compare_takes_a_null_metric_as_not_reached() -> None:
    """metrics.jsonl writes a value that is not finite as null: the threshold is not reached there."""
    from phalanx.bench.options import CompareCfg
    from phalanx.bench.trainers import summarize

    cfg = CompareCfg(task="cartpole", metric="mean_reward", threshold=10.0, warmup=0)
    fps = {"fps_step": 2.0, "fps_step_inference": 2.0, "fps_total": 1.0}
    rows = [{"iteration": 0, "from_launch_s": 5.0, "mean_reward": None} | fps]
    rows.append({"iteration": 1, "from_launch_s": 6.0, "mean_reward": 12.0} | fps)
    summary = summarize(cfg, "phalanx", rows, None)
    assert summary["to_threshold_iteration"] == 1 and summary["to_threshold_from_launch_s"] == 6.0
