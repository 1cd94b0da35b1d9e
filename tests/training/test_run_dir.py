"""A run directory belongs to one run: refusals, the lock, and what a resume leaves behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from helpers import signal_in_a_weakref_callback
from phalanx.cli import main
from phalanx.core.errors import ConfigError
from phalanx.training.run_dir import RunDir
from phalanx.training.run_paths import LAST, checkpoint_file

TINY = ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--save-interval", "2"]


def _train(run_dir: Path, *flags: str) -> int:
    return main(["train", "cartpole", *TINY, "--run-dir", str(run_dir), *flags])


def _iterations(run_dir: Path) -> list[int]:
    return [json.loads(line)["iteration"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_fresh_run_into_a_run_directory_is_refused_and_changes_nothing(tmp_path: Path, capsys) -> None:
    assert _train(tmp_path, "--max-iterations", "2") == 0
    before = _snapshot(tmp_path)
    capsys.readouterr()
    assert _train(tmp_path, "--max-iterations", "2") == 2
    err = _one_line_error(capsys)
    assert f"--run-dir: {tmp_path} already holds a run (config.json, metrics.jsonl, checkpoints/" in err
    assert "continue it with --resume last, or choose a new --run-dir" in err
    assert _snapshot(tmp_path) == before


def test_another_runs_checkpoint_is_not_resumed_into_a_run_directory(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _train(a, "--max-iterations", "2") == 0
    assert _train(b, "--max-iterations", "2") == 0
    before = _snapshot(b)
    capsys.readouterr()
    assert _train(b, "--max-iterations", "4", "--resume", str(a / "checkpoints" / "model_2.pt")) == 2
    assert f"--run-dir: {b} already holds another run than" in _one_line_error(capsys)
    assert _snapshot(b) == before


def test_a_live_run_holds_its_directory(tmp_path: Path, capsys) -> None:
    with RunDir(tmp_path, Console(quiet=True)):
        assert _train(tmp_path, "--max-iterations", "1") == 2
        err = _one_line_error(capsys)
        assert f"--run-dir: {tmp_path} is in use by another phalanx train (pid {os.getpid()} on " in err
    assert not (tmp_path / "run.lock").exists(), "released on exit"
    assert _train(tmp_path, "--max-iterations", "1") == 0


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path, capsys) -> None:
    (tmp_path / "run.lock").write_text("pid 999999 on elsewhere, started 2026-01-01 00:00:00")
    assert _train(tmp_path, "--max-iterations", "1") == 0
    assert "took over the lock of pid 999999 on elsewhere" in capsys.readouterr().out
    assert not (tmp_path / "run.lock").exists()


def test_resume_cuts_metrics_back_and_removes_temp_files(tmp_path: Path) -> None:
    """A run that crashed after its checkpoint at iteration 2 had logged iteration 2 and half a
    line, and left temp files of an interrupted save: the resume continues from 2 without
    duplicates and removes them."""
    assert _train(tmp_path, "--max-iterations", "3") == 0
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"iteration": 3, "frames": 512}\n{"iteration": 4, "fra')
    temp = [tmp_path / "checkpoints" / ".model_last.k2j3l4.tmp", tmp_path / ".config.a8b7c6.tmp"]
    for path in temp:
        path.write_bytes(b"half a file")
    assert _train(tmp_path, "--max-iterations", "5", "--resume", str(tmp_path / "checkpoints" / "model_2.pt")) == 0
    assert _iterations(tmp_path) == [0, 1, 2, 3, 4]
    assert not any(path.exists() for path in temp)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["max_iterations"] == 5 and config["world_size"] == 1


def test_a_refused_resume_leaves_config_json_as_it_was(tmp_path: Path, capsys) -> None:
    assert _train(tmp_path, "--max-iterations", "1") == 0
    config = (tmp_path / "config.json").read_text()
    capsys.readouterr()
    assert _train(tmp_path, "--max-iterations", "2", "--resume", "last", "--policy.actor-hidden-dims", "64", "64") == 2
    assert "--policy.actor-hidden-dims: the checkpoint's network has (32, 32), this run asks for (64, 64)" in (
        _one_line_error(capsys)
    )
    assert (tmp_path / "config.json").read_text() == config


def test_resume_last_restarts_a_run_that_stopped_before_its_first_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}\n")
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 0}\n{"iteration": 1}\n')
    assert _train(tmp_path, "--max-iterations", "1", "--resume", "last") == 0
    assert _iterations(tmp_path) == [0]
    assert json.loads((tmp_path / "config.json").read_text())["task"] == "cartpole"


@pytest.mark.parametrize("where", ["file", "under a file"])
def test_a_run_dir_that_cannot_be_a_directory(tmp_path: Path, capsys, where: str) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a run")
    run_dir = file if where == "file" else file / "run"
    assert _train(run_dir, "--max-iterations", "1") == 2
    err = _one_line_error(capsys)
    expected = f"{file} is a file, not a directory" if where == "file" else f"cannot create {run_dir} (Not a directory)"
    assert f"--run-dir: {expected}" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_run_dir(tmp_path: Path, capsys) -> None:
    tmp_path.chmod(0o500)
    try:
        assert _train(tmp_path / "run", "--max-iterations", "1") == 2
    finally:
        tmp_path.chmod(0o700)
    assert "--run-dir: cannot create" in _one_line_error(capsys)


def test_resume_last_falls_back_to_the_newest_readable_checkpoint(tmp_path: Path, capsys) -> None:
    train = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    train += ["--save-interval", "1", "--run-dir", str(tmp_path)]
    assert main([*train, "--max-iterations", "2"]) == 0
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "model_last.pt").write_bytes((checkpoints / "model_last.pt").read_bytes()[:1000])  # torn
    capsys.readouterr()
    assert main([*train, "--max-iterations", "3", "--resume", "last"]) == 0
    out = capsys.readouterr().out
    assert (
        "model_last.pt is not a checkpoint torch.save wrote, or it is torn" in out
        and "continuing from model_2.pt" in out
    )
    assert "resumed from" in out and "at iteration 2" in out
    for path in checkpoints.glob("*.pt"):  # none readable: model_last.pt's error, one line
        path.write_bytes(b"junk")
    assert main([*train, "--max-iterations", "4", "--resume", "last"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model_last.pt is not a checkpoint torch.save wrote, or it is torn" in err


def test_a_metrics_row_with_a_non_numeric_iteration_is_dropped_on_resume(tmp_path: Path) -> None:
    train = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    train += ["--run-dir", str(tmp_path)]
    assert main([*train, "--max-iterations", "2"]) == 0
    with (tmp_path / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"iteration": "x"}\n{"iteration": null}\n')
    assert main([*train, "--max-iterations", "3", "--resume", "last"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [0, 1, 2]


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_during_start_up_is_one_line_and_leaves_the_run_directory_usable(
    sig: int, status: int, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "train", "ant", "--device", "cpu", "--num-envs", "8"]
    command += ["--max-iterations", "1", "--run-dir", str(run)]
    # A shell's background job inherits SIGINT ignored (a CI started with `&`): a terminal's Ctrl-C is
    # what this test sends, so the child gets SIGINT's default back.
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    deadline = time.time() + 60
    while time.time() < deadline and not (run / "run.lock").exists():  # the run has started
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.splitlines() if line.strip() and "Warp CUDA warning" not in line]
    assert proc.returncode == status and len(lines) == 1, err[-3000:]
    assert (
        lines[0] == f"phalanx train: stopped by {signal.Signals(sig).name} outside the training iterations: "
        "no checkpoint was written for it"
    )
    assert not (run / "config.json").exists()
    assert main([*command[3:], "--seed", "42"]) == 0  # the next run in that directory is not refused


def test_a_stop_raised_in_code_exec_ran_still_exits_with_its_status(tmp_path: Path) -> None:
    """dataclasses build their methods with `exec`: a Ctrl-C landing in one, caught, must not make
    `python -m phalanx` end by SIGINT instead of its status 130."""
    (tmp_path / "stop_in_exec.py").write_text(
        "import sys\n"
        "from phalanx import cli\n"
        "def run(command, rest, console):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "cli._run = run\n"
        "sys.exit(cli.main(['list']))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(tmp_path), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-m", "stop_in_exec"], capture_output=True, text=True, env=env, timeout=120)
    assert (done.returncode, done.stderr) == (130, "phalanx list: stopped by SIGINT\n")


DROPPED = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the raise a callback drops


@DROPPED
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_swallowed_during_start_up_still_stops_before_the_run_directory_changes(
    sig: int, status: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from phalanx.envs import term_tables

    print_term_tables = term_tables.print_term_tables

    def swallowing(env) -> None:
        signal_in_a_weakref_callback(sig)
        print_term_tables(env)

    monkeypatch.setattr(term_tables, "print_term_tables", swallowing)
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's, which prints (not pytest's)
    ctrl_c = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job's is SIG_IGN
    try:
        assert _train(tmp_path, "--max-iterations", "2") == status
    finally:
        signal.signal(signal.SIGINT, ctrl_c)
    err = capsys.readouterr().err
    assert f"phalanx train: stopped by {signal.Signals(sig).name} outside the training iterations" in err
    assert "Exception ignored" not in err, "the swallowed raise is recorded, not printed"
    assert not (tmp_path / "config.json").exists()


@DROPPED
def test_a_stop_swallowed_just_before_training_saves_like_one_during_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from phalanx.training.run_dir import RunDir as Run

    begin = Run.begin

    def swallowing(self, *args) -> None:
        begin(self, *args)
        signal_in_a_weakref_callback(signal.SIGTERM)

    monkeypatch.setattr(Run, "begin", swallowing)
    assert _train(tmp_path, "--max-iterations", "2") == 143
    assert "interrupted by SIGTERM: saved" in capsys.readouterr().out
    assert _iterations(tmp_path) == [0]  # it finished the iteration the stop arrived in, as in training


def test_checkpoints_survive_sigkill_at_any_moment(tmp_path: Path) -> None:
    """SIGKILL (no handler can run) at moments spread over iterations that each write a
    checkpoint: model_last.pt always loads whole, and `--resume last` continues from it."""
    from phalanx.training.checkpoint import RESUME_KEYS, load_checkpoint

    run = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--device", "cpu", "--num-envs", "64"]
    command += ["--num-steps-per-env", "64", "--save-interval", "1", "--max-iterations", "100000"]
    command += ["--run-dir", str(run), "--resume", "last"]
    last = run / "checkpoints" / "model_last.pt"
    for k, delay in enumerate((0.0, 0.13, 0.29, 0.41, 0.07)):
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        iteration = load_checkpoint(last, "cartpole", RESUME_KEYS)["iteration"] if k else 0
        deadline = time.time() + 120
        while time.time() < deadline:  # until this process has written a checkpoint of its own
            if last.exists() and load_checkpoint(last, "cartpole", RESUME_KEYS)["iteration"] > iteration:
                break
            time.sleep(0.05)
        time.sleep(delay)
        proc.kill()
        proc.wait(timeout=60)
        assert load_checkpoint(last, "cartpole", RESUME_KEYS)["iteration"] > iteration  # whole, and newer


def test_checkpoint_file_takes_a_file_a_run_directory_or_last(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    older, newer = (tmp_path / "runs" / "cartpole" / name / "checkpoints" for name in ("2026-11-29_10-00-00", "b"))
    for n, checkpoints in enumerate((older, newer)):
        checkpoints.mkdir(parents=True)
        (checkpoints / "model_last.pt").write_bytes(b"x")
        os.utime(checkpoints / "model_last.pt", (1000 + n, 1000 + n))
    assert checkpoint_file("last", "cartpole") == str(Path("runs/cartpole/b/checkpoints/model_last.pt"))
    assert checkpoint_file(str(older.parent), "cartpole") == str(older / "model_last.pt")
    assert checkpoint_file("some/model_7.pt", "cartpole") == "some/model_7.pt"
    for given, message in [
        ("last", "--checkpoint: last: no run under runs/ant/ holds checkpoints/model_last.pt"),
        (str(tmp_path), f"--checkpoint: the directory {tmp_path} holds no checkpoints/model_last.pt"),
        ("", "--checkpoint: required: a model_*.pt written by phalanx train, its run directory, or 'last'"),
    ]:
        with pytest.raises(ConfigError) as error:
            checkpoint_file(given, "ant")
        assert error.value.as_flag() == message


def test_resume_takes_a_run_directory(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _train(a, "--max-iterations", "2") == 0
    assert _train(b, "--max-iterations", "3", "--resume", str(a)) == 0
    assert _iterations(b) == [2], "continued from a's last checkpoint, iteration 2"
    capsys.readouterr()
    assert _train(tmp_path / "c", "--max-iterations", "3", "--resume", str(tmp_path)) == 2
    assert _one_line_error(capsys) == f"phalanx train: error: --resume: the directory {tmp_path} holds no {LAST}"
    assert not (tmp_path / "c").exists(), "refused before anything is written"
