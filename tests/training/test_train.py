"""phalanx train and play end to end on the CPU: run directory, exact resume, learning, bad input."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from helpers import make_cpu, signal_after_iterations
from phalanx.cli import main
from phalanx.dist import DistContext
from phalanx.training import deflated
from phalanx.training.registry import train_cfg
from phalanx.training.trainer import Trainer

TINY = ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--save-interval", "5"]


def _train(run_dir: Path, *flags: str) -> int:
    return main(["train", "cartpole", *TINY, "--run-dir", str(run_dir), *flags])


def test_run_directory_contents(tmp_path: Path) -> None:
    assert _train(tmp_path, "--max-iterations", "3") == 0
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["task"] == "cartpole" and config["num_envs"] == 16 and config["device"] == "cpu"
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    required = {"iteration", "frames", "time_s", "fps_step", "fps_step_inference", "fps_total", "mean_reward"}
    assert required | {"mean_episode_length", "loss/surrogate", "loss/value", "learning_rate"} <= set(rows[-1])
    assert any(key.startswith("reward_terms/") for key in rows[-1])
    for r in rows:
        assert r["fps_total"] <= r["fps_step_inference"] <= r["fps_step"]
    assert rows[-1]["frames"] == 3 * 16 * 8
    assert (tmp_path / "checkpoints" / "model_last.pt").is_file()
    assert list(tmp_path.glob("events.out.tfevents.*")), "TensorBoard events"


@pytest.mark.parametrize("deflate_bytes", [deflated.DEFLATE_BYTES, 1], ids=["as-is", "deflated"])
def test_resume_continues_bit_identically(tmp_path: Path, monkeypatch, deflate_bytes: int) -> None:
    """10 iterations straight == 5 iterations, then --resume for 5 more: identical parameters,
    optimizer state and env state; also with every env buffer that deflate halves stored deflated."""
    monkeypatch.setattr(deflated, "DEFLATE_BYTES", deflate_bytes)
    straight, first, resumed = tmp_path / "straight", tmp_path / "first", tmp_path / "resumed"
    assert _train(straight, "--max-iterations", "10") == 0
    assert _train(first, "--max-iterations", "5") == 0
    checkpoint = first / "checkpoints" / "model_5.pt"
    assert _train(resumed, "--max-iterations", "10", "--resume", str(checkpoint)) == 0
    a, b = (
        deflated.inflate_envs(torch.load(run / "checkpoints" / "model_10.pt", weights_only=True))
        for run in (straight, resumed)
    )
    assert a["iteration"] == b["iteration"] == 10
    for name, tensor in a["policy"].items():
        assert torch.equal(tensor, b["policy"][name]), name
    for key in ("exp_avg", "exp_avg_sq"):
        for i, state in a["ppo"]["optimizer"]["state"].items():
            assert torch.equal(state[key], b["ppo"]["optimizer"]["state"][i][key])
    assert torch.equal(a["ppo"]["learning_rate"], b["ppo"]["learning_rate"])
    for name, tensor in a["ranks"][0]["env"]["sim"].items():
        assert torch.equal(tensor, b["ranks"][0]["env"]["sim"][name]), name


def test_play_writes_a_video(tmp_path: Path, capsys) -> None:
    assert _train(tmp_path, "--max-iterations", "1") == 0
    video = tmp_path / "play.mp4"
    checkpoint = tmp_path / "checkpoints" / "model_last.pt"
    assert main(["play", "cartpole", "--checkpoint", str(checkpoint), "--steps", "30", "--video", str(video)]) == 0
    assert "mean return" in capsys.readouterr().out
    import imageio.v3 as iio

    frames = iio.imread(video)
    assert frames.shape[0] == 30 and frames.shape[-1] == 3 and frames.std() > 1.0
    # ... and logs it to the run's TensorBoard (its logger), an animated GIF at half resolution
    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    events.Reload()
    (logged,) = events.Images("play/video")
    gif = Image.open(io.BytesIO(logged.encoded_image_string))
    # 60 Hz: every other frame, 30 ms apart (GIF delays are whole hundredths; browsers slow 10 ms ones)
    assert (gif.n_frames, gif.info["duration"], gif.size) == (15, 30, (240, 180))
    assert logged.step == 16 * 8  # at the frames trained


def test_play_shows_what_an_image_policy_sees_beside_the_scene(tmp_path: Path, capsys) -> None:
    assert main(["train", "cartpole-rgb", *TINY, "--max-iterations", "1", "--run-dir", str(tmp_path)]) == 0
    video = tmp_path / "play.mp4"
    checkpoint = tmp_path / "checkpoints" / "model_last.pt"
    assert main(["play", "cartpole-rgb", "--checkpoint", str(checkpoint), "--steps", "4", "--video", str(video)]) == 0
    import imageio.v3 as iio

    frames = iio.imread(video)  # the scene (480 x 360), then the 64x64 image enlarged 5 times
    assert frames.shape[1:] == (360, 808, 3)
    view = frames[:, 20:340, 488:808].astype(float)
    assert view.std() > 5.0, "the policy's image is there"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "cartpol"], "unknown task 'cartpol'; did you mean 'cartpole'? registered tasks: cartpole,"),
        (["train", "cartpole", "--num-envs", "-4"], "--num-envs: must be a positive integer, got -4"),
        (["train", "cartpole", "--device", "gpu0"], "device: got 'gpu0'; allowed: 'cpu', 'cuda' or 'cuda:K'"),
        (["train", "cartpole", "--resume", "nope.pt"], "checkpoint: no file nope.pt"),
        (["play", "cartpole", "--checkpoint", "nope.pt"], "checkpoint: no file nope.pt"),
        (
            ["play", "cartpole", "--checkpoint", "nope.pt", "--num-envs", "4", "--video-env", "4"],
            "--video-env: must be an env index in [0, 3], got 4",
        ),
        (["train"], "train: missing TASK"),
        (["bogus"], "unknown command 'bogus'"),
    ],
)
def test_bad_cli_input_is_one_line_and_exit_2(args: list[str], message: str, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_checkpoint_of_another_task(tmp_path: Path, capsys) -> None:
    checkpoint = tmp_path / "ant.pt"
    torch.save({"format": 2, "task": "ant"}, checkpoint)
    assert main(["play", "cartpole", "--checkpoint", str(checkpoint)]) == 2
    assert "was trained on task 'ant', not 'cartpole'" in capsys.readouterr().err


def test_cli_error_has_no_traceback_in_a_real_process() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "phalanx", "train", "cartpole", "--num-envs", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr and "--num-envs" in run.stderr


@pytest.mark.slow
def test_cartpole_learns_with_cpu_defaults(tmp_path: Path) -> None:
    """`phalanx train cartpole` with its CPU defaults: mean episode length reaches 95 % of the
    5 s (300 steps) maximum."""
    assert main(["train", "cartpole", "--device", "cpu", "--run-dir", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert max(r.get("mean_episode_length", 0.0) for r in rows) >= 0.95 * 300
    assert rows[-1]["mean_episode_length"] >= 0.95 * 300


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_saves_a_checkpoint_and_exits_with_its_status(tmp_path: Path, sig: int, status: int) -> None:
    """Ctrl-C and a scheduler's SIGTERM: finish the iteration, save, exit 128 + the signal."""
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", *TINY, "--max-iterations", "100000"]
    returncode, out, err = signal_after_iterations([*command, "--run-dir", str(tmp_path)], tmp_path, sig)
    assert returncode == status and "Traceback" not in err, err
    assert f"interrupted by {signal.Signals(sig).name}: saved" in out
    saved = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    assert 3 <= saved["iteration"] < 100000
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == saved["iteration"], "each iteration logged"
    assert not (tmp_path / "run.lock").exists()


def test_max_time_s_stops_after_the_iteration_that_reaches_it_and_saves(tmp_path: Path, capsys) -> None:
    """A time limit any iteration exceeds: one iteration, logged and saved, exit 0; resumed with
    the same limit, the run has no time left and trains nothing more; with a later one it goes on."""
    limit = ["--max-iterations", "100000", "--max-time-s", "1e-6"]
    assert _train(tmp_path, *limit) == 0
    assert "--max-time-s 1e-06: " in capsys.readouterr().out
    saved = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    assert saved["iteration"] == 1 and len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 1
    assert _train(tmp_path, *limit, "--resume", "last") == 0
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 1
    spent = saved["elapsed_s"]
    assert _train(tmp_path, "--max-iterations", "3", "--max-time-s", str(spent * 1000), "--resume", "last") == 0
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 3, "max_iterations came first"


def test_the_eta_is_the_time_to_whichever_limit_comes_first() -> None:
    from phalanx.training.logger import time_left_s

    m = {"iteration": 9, "time_s": 10.0}  # 1 s an iteration
    assert time_left_s(m, 100) == pytest.approx(90.0)
    assert time_left_s(m, 100, 30.0) == pytest.approx(20.0)
    assert time_left_s(m, 15, 30.0) == pytest.approx(5.0)
    assert time_left_s(m, 100, 8.0) == 0.0


def test_resume_with_another_env_count_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    assert _train(tmp_path / "a", "--max-iterations", "1") == 0
    checkpoint = tmp_path / "a" / "checkpoints" / "model_last.pt"
    args = ["train", "cartpole", "--device", "cpu", "--num-envs", "32", "--num-steps-per-env", "8"]
    assert main([*args, "--run-dir", str(tmp_path / "b"), "--resume", str(checkpoint)]) == 2
    assert "--num-envs: the checkpoint was trained with num_envs 16, this run has 32" in capsys.readouterr().err


def test_resume_on_another_kind_of_device_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    """A run continues exactly only with its random generators, whose states a CUDA and a CPU
    generator do not share: a checkpoint trained on a GPU (its stored device, here written in)
    resumed on the CPU is refused before any env is built, naming --device."""
    assert _train(tmp_path / "a", "--max-iterations", "1") == 0
    state = torch.load(tmp_path / "a" / "checkpoints" / "model_last.pt", weights_only=True)
    state["config"]["device"] = "cuda:1"
    torch.save(state, tmp_path / "gpu.pt")
    assert _train(tmp_path / "b", "--max-iterations", "2", "--resume", str(tmp_path / "gpu.pt")) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "phalanx train: error: --device: the checkpoint was trained on cuda:1, this run is on cpu: its random "
        "generators continue only on a cuda device (resume with --device cuda)"
    ]


def test_a_signal_during_the_iterations_sum_stops_training_one_iteration_later() -> None:
    """A signal that lands while a rank waits in the iteration's sum over ranks missed that sum, so
    the other ranks cannot know: stopping now would leave this rank alone in the checkpoint's
    collectives. It counts in the next iteration's sum, and every rank stops after that one."""

    class SignalDuringSum(DistContext):
        def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
            if trainer.iteration == 0:
                trainer._on_stop_signal(signal.SIGTERM, None)
            return tensor

    cfg = train_cfg("cartpole")
    cfg.num_steps_per_env = 8
    trainer = Trainer(cfg, make_cpu("cartpole", num_envs=16), None, Console(quiet=True), SignalDuringSum())
    trainer.iterate()
    assert not trainer.interrupted
    trainer.iterate()
    assert trainer.stop_signal == signal.SIGTERM


def test_an_env_reset_after_its_trainer_starts_as_one_reset_when_made() -> None:
    """`phalanx train` builds the env without its first reset, then the trainer, then resets: the
    reset traces the compiled step (runs it once, dry), and the env starts and steps as one made
    the usual way. Before that reset its observations are zeros of their shapes and it
    refuses to step."""
    cfg = train_cfg("anymal-flat")
    cfg.num_envs, cfg.device, cfg.num_steps_per_env = 8, "cpu", 4
    made = make_cpu("anymal-flat", seed=5, compile=True)
    deferred = make_cpu("anymal-flat", seed=5, compile=True, reset=False)
    assert deferred.observation_spec == made.observation_spec
    assert all(not value.any() for value in deferred.obs.values())
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        deferred.step(torch.zeros(8, deferred.action_dim))
    Trainer(cfg, deferred, run_dir=None, console=Console(quiet=True))
    traced, compiled_step = [], deferred.stepper.fn

    def spy(actions: torch.Tensor):
        traced.append(deferred.sim._skip_warp)
        return compiled_step(actions)

    deferred.stepper.fn = spy
    deferred.reset()
    assert traced == [True], "the first reset ran the compiled step once, dry"
    deferred.stepper.fn = compiled_step
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        actions = torch.rand(8, made.action_dim, generator=g) * 2 - 1
        assert all(torch.equal(made.obs[k], deferred.obs[k]) for k in made.obs)
        made.step(actions), deferred.step(actions)
    assert all(torch.equal(made.obs[k], deferred.obs[k]) for k in made.obs)


def test_no_episode_statistics_before_an_episode_has_ended(tmp_path: Path, capsys) -> None:
    """Two env steps of cartpole end no episode: the rows carry no mean reward or length (rather
    than zeros a plot would show as a value), and the console says that none has ended."""
    flags = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "2", "--max-iterations", "2"]
    assert main(["train", "cartpole", *flags, "--logger", "none", "--run-dir", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["episodes"] for row in rows] == [0, 0]
    assert not any("mean_reward" in row or "mean_episode_length" in row for row in rows)
    assert capsys.readouterr().out.count("no episode has ended yet") == 2
