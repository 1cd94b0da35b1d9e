"""phalanx bench learn: tasks declare their result when registered; the command trains each task
and seed in a fresh process until its threshold or its budget, reports runs that fail or are
killed, and refuses bad input in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phalanx.bench import docs_tables
from phalanx.bench.learn import check_result, logged_keys, passes
from phalanx.bench.learn_job import JobSpec, LearnJob, MetricFollower
from phalanx.bench.learn_report import verdict_table
from phalanx.cli import main
from phalanx.core.errors import ConfigError
from phalanx.core.stops import PARENT_ENV
from phalanx.training.registry import BUILTIN, LearningResult, env_cfg, register, registered_tasks

CPU = ["--device", "cpu", "--no-cold"]


def test_every_builtin_task_declares_a_result_that_its_training_logs() -> None:
    builtin = {
        name: spec for name, spec in registered_tasks().items() if spec.module.removeprefix("phalanx.tasks.") in BUILTIN
    }
    assert len(builtin) >= 17
    for name, spec in builtin.items():
        assert spec.result is not None, f"{name} declares no result"
        spec.result.check(name)
        check_result(name, spec.result, env_cfg(name))


def test_logged_keys_are_what_a_training_writes(tmp_path: Path) -> None:
    """franka-reach: metrics, reward terms and curriculum levels; one CPU iteration."""
    run = tmp_path / "run"
    args = ["train", "franka-reach", "--device", "cpu", "--num-envs", "8", "--max-iterations", "1"]
    assert main([*args, "--logger", "none", "--run-dir", str(run)]) == 0
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    expected = logged_keys(env_cfg("franka-reach"))
    assert {k for k in expected if not k.startswith(("metrics/", "reward_terms/"))} <= set(row)
    assert {k for k in row if k.startswith(("metrics/", "reward_terms/", "env/"))} <= expected


def test_register_refuses_a_bad_result_by_its_field() -> None:
    cfg = env_cfg("cartpole")
    from phalanx.training.registry import train_cfg

    for result, field in [
        (LearningResult(metric="mean_reward", threshold=1.0, budget_s=0.0), "result.budget_s"),
        (LearningResult(metric="mean_reward", threshold=float("nan"), budget_s=10.0), "result.threshold"),
        (LearningResult(metric="mean_reward", threshold=1.0, budget_s=10.0, direction=">"), "result.direction"),
        (LearningResult(metric="", threshold=1.0, budget_s=10.0), "result.metric"),
    ]:
        with pytest.raises(ConfigError, match=field):
            register("test-bad-result", env_cfg=cfg, train_cfg=train_cfg("cartpole"), result=result)
    assert "test-bad-result" not in registered_tasks()


def test_the_metric_is_a_moving_mean_weighted_by_episodes(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    follower = MetricFollower(path, "metrics/success", window=2)
    assert follower.poll(0.0) == []
    rows = [
        {"episodes": 10, "metrics/success": 0.0},
        {"episodes": 0},  # no episode ended: no new value
        {"episodes": 30, "metrics/success": 1.0},
        {"episodes": 10, "metrics/success": 0.5},
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(text[:-5])  # the last row still being written
    got = [r["smoothed"] for r in follower.poll(1.0)]
    assert got == [0.0, 0.0, 0.75]  # (10 * 0 + 30 * 1) / 40
    path.write_text(text)
    (last,) = follower.poll(2.0)
    assert last["smoothed"] == pytest.approx((30 * 1.0 + 10 * 0.5) / 40) and last["from_launch_s"] == 2.0
    level = MetricFollower(path, "env/terrain_level", window=3)  # not per episode: rows alike
    path.write_text("".join(json.dumps({"episodes": e, "env/terrain_level": v}) + "\n" for e, v in [(0, 1), (9, 2)]))
    assert [r["smoothed"] for r in level.poll(0.0)] == [1.0, 1.5]


def test_pass_rule_is_two_thirds_of_the_seeds() -> None:
    assert passes(2, 3) and passes(3, 3) and passes(1, 1) and passes(2, 2)
    assert not passes(1, 3) and not passes(1, 2) and not passes(0, 0)


def _run(task: str, seed: int, reached: bool, **fields) -> dict:
    row = {"task": task, "seed": seed, "cold_run": False, "caches": "warm"}
    row |= {"status": "reached" if reached else "budget"}
    row |= {"metric": "mean_reward", "direction": ">=", "threshold": 5.0, "budget_s": 60.0, "reached": reached}
    row |= {"reached_s": 20.0 + seed if reached else None, "startup_s": 4.0, "fps_total": 2e6, "gpu_uuid": "GPU-abc"}
    return row | fields


def test_the_tables_give_each_task_its_verdict() -> None:
    results = [_run("a", 0, True), _run("a", 1, True), _run("a", 2, False), _run("b", 0, False)]
    results.append(_run("b", 0, True, cold_run=True, caches="cold"))
    table = verdict_table(results)
    assert "| a | mean_reward >= 5 in 60 s | 2 of 3 | 20, 21, no | - | pass |" in table
    assert "| b | mean_reward >= 5 in 60 s | 0 of 1 | no | 20 | **fail** |" in table
    machine = {"gpu_count": 4, "gpu": "NVIDIA H200", "commit": "abc1234"}
    bench = {"kind": "learn", "command": "phalanx bench learn a b", "date": "2026-11-28", "device": "cuda"}
    bench["machine"] = machine
    cold_only = [_run("c", 0, True, caches="cold"), _run("d", 0, True, caches="cold", reached_iteration=0)]
    cold_only = bench | {"command": "phalanx bench learn c d", "results": cold_only}
    docs = docs_tables.table("learn", [(bench | {"results": results}, "results/one/"), (cold_only, "results/two/")])
    assert "| a | mean_reward >= 5 in 60 s | pass | 2/3 | 20 (4), 21 (4), no (4) | - | 2.00 M | A |" in docs
    assert "| b | mean_reward >= 5 in 60 s | **fail** | 0/1 | no (4) | 20c (4) | 2.00 M | A |" in docs
    assert "| c | mean_reward >= 5 in 60 s | pass | 1/1 (cold) | - | 20c (4) | 2.00 M | B |" in docs
    assert "| d | mean_reward >= 5 in 60 s | **no measure**: met in the first iteration |" in docs
    assert "- A: `phalanx bench learn a b`; 2026-11-28, commit abc1234, 4 x NVIDIA H200 (GPU-abc)" in docs
    assert "[raw results](results/two/)" in docs


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "unknown task 'nope'; registered tasks: cartpole"),
        (["cartpole", "--metric", "metrics/nope"], "--metric: task 'cartpole' does not log 'metrics/nope'; it logs"),
        (["cartpole", "--budget-s", "0"], "--budget-s: must be a finite number > 0 seconds, got 0.0"),
        (["cartpole", "--budget-s", "-5"], "--budget-s: must be a finite number > 0 seconds, got -5.0"),
        (["cartpole", "--seeds", "0"], "--seeds: must be a positive integer, got 0"),
        (["cartpole", "--first-seed", "-1"], "--first-seed: must be an integer >= 0, got -1"),
        (["anymal-nav"], "anymal-nav trains over a trained anymal-flat policy: add anymal-flat to the tasks"),
        (["cartpole", "ant", "--threshold", "3"], "--threshold: overrides one task's result, got 2 tasks"),
        (["cartpole", "--videos", "some"], "--videos: got 'some'; allowed: each, first, none"),
        (["--seeds", "2"], "bench learn: name the tasks (or all) before the flags"),
        (["cartpole", "--algos", "ppo,ddpg"], "--algos: got 'ppo,ddpg'; allowed: distinct names of ppo, td3, sac"),
        (["cartpole", "--algos", "td3,td3"], "--algos: got 'td3,td3'; allowed: distinct names of"),
        (
            ["cartpole-rgb", "--algos", "ppo,sac"],
            "--algos: task 'cartpole-rgb' learns from images ('image'), which only ppo",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line(args: list[str], message: str, capsys, tmp_path: Path) -> None:
    assert main(["bench", "learn", *args, *CPU, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "run").exists(), "nothing written"


def test_videos_without_a_writer_are_refused_before_the_suite(monkeypatch, capsys, tmp_path: Path) -> None:
    """A suite whose videos could not be written is refused before it trains (a GPU suite once
    trained for 25 minutes, then every job's video failed)."""
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # as if not installed
    assert main(["bench", "learn", "cartpole", *CPU, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--videos: an .mp4 needs imageio-ffmpeg, which is not installed: pip install imageio-ffmpeg")
    assert not (tmp_path / "run").exists(), "nothing written"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """One cache for the module's suites, warmed by one cartpole iteration (Warp compiles its CPU
    kernels once), so that every job starts in seconds and a budget measures training."""
    from phalanx.bench.startup import cache_env

    cache = tmp_path_factory.mktemp("learn-cache")
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--device", "cpu", "--max-iterations", "1"]
    command += ["--logger", "none", "--run-dir", str(cache / "warm-up")]
    subprocess.run(command, env=cache_env(cache / "cartpole", cold=False), check=True, capture_output=True)
    return cache


def _bench(run_dir: Path, cache: Path, *flags: str) -> list[str]:
    args = [sys.executable, "-m", "phalanx", "bench", "learn", "cartpole", *CPU, "--run-dir", str(run_dir)]
    return [*args, "--cache-dir", str(cache), *flags]


def test_jobs_stop_at_their_threshold_and_at_their_budget(tmp_path: Path, cache_dir: Path) -> None:
    """cartpole on the CPU, 2 seeds: an episode length of 100 (a third of the way to balanced) is
    reached after some iterations (stopped there, a video played of the first seed; the bench exits
    0), one of 1e9 never (stopped at the budget; the task fails, the bench exits 1), with the seed
    --first-seed names."""
    run = tmp_path / "reached"
    flags = ["--seeds", "2", "--threshold", "100", "--budget-s", "120", "--videos", "first"]
    done = subprocess.run(_bench(run, cache_dir, *flags), check=False)
    assert done.returncode == 0
    bench = json.loads((run / "bench.json").read_text())
    assert bench["kind"] == "learn" and bench["command"].startswith("phalanx bench learn cartpole")
    seeds = bench["results"]
    assert [(r["seed"], r["status"], r["exit_code"]) for r in seeds] == [(0, "reached", 143), (1, "reached", 143)]
    for r in seeds:
        assert r["caches"] == "warm" and 0 < r["startup_s"] < r["reached_s"] < r["wall_s"] and r["final_metric"] >= 100
        assert 0 < r["reached_iteration"] <= 100 and r["fps_total"] > 0 and r["curve"][0][1] is not None
        assert (run / "jobs" / f"cartpole-seed{r['seed']}" / "run" / "checkpoints" / "model_last.pt").is_file()
    assert seeds[0]["video"] == "cartpole-seed0.mp4" and (run / "videos" / "cartpole-seed0.mp4").stat().st_size > 0
    assert "episodes finished" in seeds[0]["played"] and seeds[1]["video"] is None
    report = (run / "report.md").read_text()
    assert "| cartpole | mean_episode_length >= 100 in 120 s | 2 of 2 |" in report and "| pass |" in report
    assert (run / "learn-cartpole.png").stat().st_size > 1000

    run = tmp_path / "budget"
    flags = ["--seeds", "1", "--first-seed", "5", "--threshold", "1e9", "--budget-s", "20", "--videos", "none"]
    assert subprocess.run(_bench(run, cache_dir, *flags), check=False).returncode == 1
    (r,) = json.loads((run / "bench.json").read_text())["results"]
    assert r["status"] == "budget" and not r["reached"] and r["exit_code"] == 143 and r["seed"] == 5
    assert json.loads((run / "jobs" / "cartpole-seed5" / "run" / "config.json").read_text())["seed"] == 5
    assert 20 < r["wall_s"] < 20 + 60 and r["final_metric"] < 1e9 and r["iterations"] > 0
    assert "**fail**" in (run / "report.md").read_text()


def test_a_job_killed_from_outside_is_reported_and_the_others_go_on(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "killed"
    flags = ["--seeds", "2", "--threshold", "1e9", "--budget-s", "20", "--videos", "none"]
    bench = subprocess.Popen(_bench(run, cache_dir, *flags))
    try:
        lock, metrics = (run / "jobs" / "cartpole-seed0" / "run" / name for name in ("run.lock", "metrics.jsonl"))
        deadline = time.time() + 240
        while time.time() < deadline and not (metrics.is_file() and metrics.read_text()):
            time.sleep(0.2)
        os.kill(int(lock.read_text().split()[1]), signal.SIGKILL)  # "pid N on HOST, started ..."
        assert bench.wait(timeout=300) == 1, "a task failed"
    finally:
        if bench.poll() is None:
            bench.send_signal(signal.SIGINT)  # it stops its jobs
            bench.wait(timeout=180)
    killed, other = json.loads((run / "bench.json").read_text())["results"]
    assert killed["status"] == "killed" and killed["reason"] == "killed from outside by SIGKILL"
    assert killed["exit_code"] == -signal.SIGKILL and killed["log_tail"] is not None
    assert other["status"] == "budget"
    report = (run / "report.md").read_text()
    assert "### cartpole seed 0" in report and "killed from outside by SIGKILL" in report


FAKE_TRAINER = """
import json, os, signal, sys, time
run, rewards, end = sys.argv[1], [float(x) for x in sys.argv[2].split(",")], sys.argv[3]
os.makedirs(run, exist_ok=True)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
with open(os.path.join(run, "metrics.jsonl"), "a") as f:
    def row(i, reward):
        f.write(json.dumps({"iteration": i, "time_s": i, "frames": i, "fps_total": 1.0, "episodes": 1,
                            "mean_reward": reward}) + "\\n")
        f.flush()
    for i, reward in enumerate(rewards):
        if stop:
            break
        row(i, reward)
        time.sleep(0.1)
    if end == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    while not stop:
        time.sleep(0.05)
    row(len(rewards), 1e9)  # the iteration it finishes after the stop
sys.exit(143)
"""


def _fake_job(tmp_path: Path, rewards: str, end: str, budget_s: float):
    from phalanx.bench.learn_job import JobSpec, LearnJob

    spec = JobSpec("fake", 0, False, LearningResult(metric="mean_reward", threshold=5.0, budget_s=budget_s))
    command = [sys.executable, "-c", FAKE_TRAINER, str(tmp_path / "run"), rewards, end]
    job = LearnJob(spec, "cpu-0", command, dict(os.environ), tmp_path, window=1, caches="warm")
    job.launch()
    deadline = time.time() + 60
    while job.running and time.time() < deadline:
        job.poll()
        time.sleep(0.05)
    return job.outcome()


def test_a_job_stops_at_its_threshold_and_rows_after_a_stop_do_not_count(tmp_path: Path) -> None:
    reached = _fake_job(tmp_path / "a", "0,1,7,0", "wait", budget_s=30.0)
    assert (reached["status"], reached["reached_iteration"], reached["exit_code"]) == ("reached", 2, 143)
    budget = _fake_job(tmp_path / "b", "0,0", "wait", budget_s=1.0)
    assert (budget["status"], budget["reached"], budget["exit_code"]) == ("budget", False, 143)
    assert budget["best_metric"] == 1e9, "the row written after the stop was read, and not counted"


def test_a_crash_is_a_failure_not_an_outside_kill(tmp_path: Path) -> None:
    crashed = _fake_job(tmp_path, "0", "segv", budget_s=30.0)
    assert crashed["status"] == "failed" and crashed["reason"] == "crashed (SIGSEGV)"
    assert crashed["exit_code"] == -signal.SIGSEGV and crashed["log_tail"] is not None


TEACHER_AND_STUDENT = """
import phalanx
from phalanx.rl.cfg import DistillCfg
from phalanx.tasks.cartpole import cartpole_cfg, cartpole_train_cfg
from phalanx.training.registry import LearningResult


def student_cfg():
    cfg = cartpole_train_cfg()
    cfg.distill = DistillCfg(iterations=10, mix_iterations=5)
    return cfg


phalanx.register("pole-teacher", env_cfg=cartpole_cfg, train_cfg=cartpole_train_cfg,
                 result=LearningResult(metric="mean_episode_length", threshold=100.0, budget_s=120.0))
phalanx.register("pole-student", env_cfg=cartpole_cfg, train_cfg=student_cfg,
                 result=LearningResult(metric="mean_episode_length", threshold=100.0, budget_s=120.0,
                                       teacher="pole-teacher"))
"""


def test_a_student_learns_from_the_suites_run_of_its_teacher(tmp_path: Path, cache_dir: Path) -> None:
    """A task whose result names a teacher trains after the teacher's run of the same seed, with
    `--teacher` its checkpoint; the report adds the teacher's time to the student's. Without its
    teacher in the suite it is refused in one line."""
    (tmp_path / "poles.py").write_text(TEACHER_AND_STUDENT)
    for task in ("pole-teacher", "pole-student"):  # cartpoles: the warm cartpole caches serve them
        if not (cache_dir / task).exists():
            (cache_dir / task).symlink_to(cache_dir / "cartpole", target_is_directory=True)
    run = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "bench", "learn", "pole-student", "pole-teacher", *CPU]
    command += ["--module", str(tmp_path / "poles.py"), "--run-dir", str(run), "--cache-dir", str(cache_dir)]
    assert subprocess.run([*command, "--seeds", "1", "--videos", "none"], check=False).returncode == 0
    student, teacher = json.loads((run / "bench.json").read_text())["results"]
    assert teacher["task"] == "pole-teacher" and student["task"] == "pole-student"
    assert teacher["status"] == student["status"] == "reached"
    assert student["launched_at"] >= teacher["launched_at"] + teacher["wall_s"]
    config = json.loads((run / "jobs" / "pole-student-seed0" / "run" / "config.json").read_text())
    assert config["teacher"] == str(
        (run / "jobs" / "pole-teacher-seed0" / "run" / "checkpoints" / "model_last.pt").resolve()
    )
    assert student["prerequisites_s"] == {"pole-teacher": teacher["wall_s"]}
    assert f"after pole-teacher's {teacher['wall_s']:.0f} s" in (run / "report.md").read_text()
    alone = subprocess.run([*command[:6], *command[7:]], capture_output=True, text=True, check=False)
    assert alone.returncode == 2
    assert alone.stderr.strip().endswith(
        "pole-student learns from a trained pole-teacher policy: add pole-teacher to "
        "the tasks (its run with the same seed provides it)"
    )


def test_each_algorithm_is_judged_on_its_own() -> None:
    """--algos ppo,td3: a cold run with the first, then every seed with each; the verdicts, the
    runs and the docs' table keep "cartpole" and "cartpole --algo td3" apart."""
    from phalanx.bench.docs_tables import _learn
    from phalanx.bench.learn import plan
    from phalanx.bench.learn_report import runs_table, verdicts
    from phalanx.training.registry import LearningResult

    result = LearningResult(metric="mean_episode_length", threshold=285.0, budget_s=40.0)
    specs = plan({"cartpole": result}, [0, 1], True, ("ppo", "td3"))
    assert [s.name for s in specs] == [
        "cartpole-seed0-cold",
        "cartpole-seed0",
        "cartpole-seed1",
        "cartpole-td3-seed0",
        "cartpole-td3-seed1",
    ]
    common = {"caches": "warm", "cold_run": False, "status": "reached", "metric": "mean_episode_length"}
    common |= {"direction": ">=", "threshold": 285.0, "budget_s": 40.0, "slot": "cuda:0", "startup_s": 9.0}
    common |= {"reached_training_s": 1.0, "reached_iteration": 3, "fps_total": 1e6, "final_metric": 290.0}
    common |= {"concurrent_jobs": 1, "fps_total": 1e6}
    results = [
        common | {"task": "cartpole", "algo": "ppo", "seed": 0, "reached": True, "reached_s": 10.0},
        common
        | {"task": "cartpole", "algo": "td3", "seed": 0, "reached": False, "reached_s": None, "status": "budget"}
        | {"video": None, "played": "play failed (exit 2): phalanx play cartpole: error: --video: ..."},
    ]
    judged = verdicts(results)
    assert judged["cartpole"]["passes"] and not judged["cartpole --algo td3"]["passes"]
    table = runs_table(results).splitlines()
    assert table[2].startswith("| cartpole | 0 | warm |") and table[2].endswith("| 1 | - |")
    assert table[3].startswith("| cartpole --algo td3 | 0 | warm |") and table[3].endswith("| play failed |")
    columns, rows = _learn([_Run("A", [{"kind": "learn", "task": "cartpole", "results": results}])])
    assert [row[0] for row in rows] == ["cartpole", "cartpole --algo td3"]


class _Run:
    def __init__(self, label: str, benches: list[dict]):
        self.label, self.benches = label, benches


@pytest.mark.slow
def test_an_off_policy_learner_runs_in_the_suite(tmp_path: Path, cache_dir: Path) -> None:
    """cartpole with --algos td3 (small networks through --train-args, which are checked against
    TD3's settings): its job trains with --algo td3 and reaches an episode length of 60."""
    run = tmp_path / "td3"
    small = "--algo.actor-hidden-dims 64 64 --algo.critic-hidden-dims 128 128 --algo.batch-size 512"
    flags = ["--algos", "td3", "--seeds", "1", "--threshold", "60", "--budget-s", "600", "--videos", "none"]
    done = subprocess.run(_bench(run, cache_dir, *flags, f"--train-args={small}"), check=False)
    assert done.returncode == 0
    (r,) = json.loads((run / "bench.json").read_text())["results"]
    assert (r["algo"], r["status"]) == ("td3", "reached")
    config = json.loads((run / "jobs" / "cartpole-td3-seed0" / "run" / "config.json").read_text())
    assert config["algo"]["actor_hidden_dims"] == [64, 64]
    assert "| cartpole --algo td3 | mean_episode_length >= 60 in 600 s | 1 of 1 |" in (run / "report.md").read_text()


def test_a_job_not_started_says_why_in_the_suites_rows(tmp_path: Path) -> None:
    """bench.json is rewritten after each job: a job still waiting then is not yet started (not
    'stopped'), one the suite gave up on says why, and one left when the suite was stopped says
    so; each row names its algorithm."""
    from phalanx.bench.learn import Suite
    from phalanx.bench.learn_job import JobSpec

    result = LearningResult(metric="mean_reward", threshold=5.0, budget_s=10.0)
    waiting, skipped = JobSpec("a", 0, False, result, "td3"), JobSpec("b", 0, False, result)
    suite = Suite([waiting, skipped], [], tmp_path, tmp_path, [], 1, {}, {})
    suite.pending.remove(skipped)
    suite.skipped[skipped] = "no teacher"
    rows = suite.results([waiting, skipped])
    assert [(r["algo"], r["status"], r["reason"]) for r in rows] == [
        ("td3", "not run", "not started yet (the suite was running when this was written)"),
        ("ppo", "not run", "no teacher"),
    ]
    suite.stop_all()
    assert suite.results([waiting])[0]["reason"] == "the suite stopped before it started"


def test_a_job_knows_its_bench_as_the_parent_it_stops_with(tmp_path: Path) -> None:
    spec = JobSpec("cartpole", 0, False, LearningResult(metric="mean_reward", threshold=1.0, budget_s=10.0))
    command = [sys.executable, "-c", f"import os; print(os.environ[{PARENT_ENV!r}])"]
    job = LearnJob(spec, "cpu-0", command, dict(os.environ), tmp_path, window=1, caches="warm")
    job.launch()
    assert job.process.wait(timeout=60) == 0
    assert job.log_path.read_text().strip() == str(os.getpid())


def test_a_job_takes_its_budget_as_a_time_limit_unless_another_library_trains_it(tmp_path: Path) -> None:
    """The budget as `--max-time-s`, so that the job's log gives the budget's ETA, not that of an
    iteration count no job reaches; a library's trainer (which takes no time limit) runs without."""
    from phalanx.bench.learn_job import train_command

    spec = JobSpec("cartpole", 0, False, LearningResult(metric="mean_reward", threshold=1.0, budget_s=240.0))
    command = train_command(spec, "cpu", tmp_path, [], [])
    assert command[command.index("--max-time-s") + 1] == "240"
    assert "--max-time-s" not in train_command(spec, "cpu", tmp_path, ["--trainer=rsl_rl"], [])
