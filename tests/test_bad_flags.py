"""Every bad flag, path or checkpoint is one line naming the flag, the value and what is allowed,
exit status 2, and (where it can be known then) refused before any env is built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import phalanx
import phalanx.training.registry
from phalanx.assets import asset_path
from phalanx.cli import main
from phalanx.core.errors import ConfigError
from phalanx.training.registry import env_cfg

TINY = ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("run")
    assert main(["train", "cartpole", *TINY, "--max-iterations", "1", "--run-dir", str(run_dir)]) == 0
    return run_dir / "checkpoints" / "model_last.pt"


@pytest.fixture(scope="module")
def partial(tmp_path_factory, checkpoint: Path) -> Path:
    """A checkpoint dict that lost its learner and env state."""
    state = torch.load(checkpoint, weights_only=True)
    path = tmp_path_factory.mktemp("partial") / "partial.pt"
    torch.save({key: state[key] for key in ("format", "task", "config", "policy", "obs_norm")}, path)
    return path


@pytest.fixture
def no_env(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("an env was built before the input was checked")

    monkeypatch.setattr(phalanx.training.registry, "make", refuse)


def _run(args: list[str], capsys) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


TRAIN = ["train", "cartpole", *TINY, "--max-iterations", "1"]
BAD_TRAIN_FLAGS = [
    (["--algo.num-mini-batches", "0"], "--algo.num-mini-batches: must be a positive integer, got 0"),
    (["--algo.num-mini-batches", "-4"], "--algo.num-mini-batches: must be a positive integer, got -4"),
    (["--algo.num-mini-batches", "3"], "--algo.num-mini-batches: 3 does not divide num_envs x num_steps_per_env"),
    (
        ["--env.sim.dt", "0"],
        "--env.sim.dt: must be a finite number > 0 seconds (or None: the model's timestep), got 0.0",
    ),
    (
        ["--env.sim.dt", "-0.01"],
        "--env.sim.dt: must be a finite number > 0 seconds (or None: the model's timestep), got -0.01",
    ),
    (["--algo.learning-rate", "nan"], "--algo.learning-rate: must be a finite number > 0, got nan"),
    (["--algo.learning-rate", "0"], "--algo.learning-rate: must be a finite number > 0, got 0.0"),
    (["--algo.learning-rate", "-1e-3"], "--algo.learning-rate: must be a finite number > 0, got -0.001"),
    (["--algo.num-learning-epochs", "0"], "--algo.num-learning-epochs: must be a positive integer, got 0"),
    (["--env.episode-length-s", "0"], "--env.episode-length-s: must be a finite number > 0 seconds, got 0.0"),
    (["--policy.init-noise-std", "0"], "--policy.init-noise-std: must be a finite number > 0, got 0.0"),
    (["--policy.init-noise-std", "-1"], "--policy.init-noise-std: must be a finite number > 0, got -1.0"),
    (["--algo.gamma", "1.5"], "--algo.gamma: must be in [0, 1], got 1.5"),
    (["--policy.cnn-strides", "2", "0"], "--policy.cnn-strides: must be a positive integer, got 0"),
    (["--policy.cnn-features", "0"], "--policy.cnn-features: must be a positive integer, got 0"),
    (["--max-iterations", "0"], "--max-iterations: must be a positive integer, got 0"),
    (["--stall-timeout-s", "inf"], "--stall-timeout-s: must be a finite number > 0 seconds, got inf"),
    (["--env.num-envs", "64"], "--env.num-envs: got 64; the env count is set by --num-envs"),
    (["--env.cpu-num-envs", "64"], "--env.cpu-num-envs: got 64; the env count is set by --num-envs"),
    (["--num-envs", "0"], "--num-envs: must be a positive integer, got 0"),
    (["--algo", "ddpg"], "--algo: got 'ddpg'; allowed: ppo, td3, sac"),
    (["--algo", "sac", "--algo.log-std-max", "-6"], "--algo.log-std-max: got -6.0; more than algo.log_std_min (-5.0)"),
    (["--algo", "sac", "--algo.alpha-init", "0"], "--algo.alpha-init: must be a finite number > 0, got 0.0"),
    (
        ["--algo", "td3", "--algo.learning-starts", "100", "--algo.buffer-size", "100"],
        "--algo.learning-starts: got 100; less than algo.buffer_size (100)",
    ),
    (["--algo", "td3", "--algo.n-step", "0"], "--algo.n-step: must be a positive integer, got 0"),
    (["--algo", "td3", "--algo.v-max", "-200"], "--algo.v-max: got -200.0; more than algo.v_min (-100.0)"),
    (["--algo", "td3", "--algo.std-max", "0"], "--algo.std-max: got 0.0; at least algo.std_min (0.001)"),
    (["--algo", "td3", "--trainer", "sb3"], "--algo: --algo td3 trains with phalanx's trainer, not --trainer sb3"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_TRAIN_FLAGS, ids=[" ".join(f) for f, _ in BAD_TRAIN_FLAGS])
def test_bad_train_flag(flags: list[str], message: str, no_env, capsys, tmp_path: Path) -> None:
    assert message in _run([*TRAIN, "--run-dir", str(tmp_path / "run"), *flags], capsys)
    assert not (tmp_path / "run").exists(), "nothing written"


def test_resume_with_other_network_sizes(checkpoint: Path, no_env, capsys, tmp_path: Path) -> None:
    args = [*TRAIN, "--run-dir", str(tmp_path), "--resume", str(checkpoint), "--policy.critic-hidden-dims", "8"]
    err = _run(args, capsys)
    assert "--policy.critic-hidden-dims: the checkpoint's network has (32, 32), this run asks for (8,)" in err


def test_resume_from_a_checkpoint_that_lacks_keys(partial: Path, no_env, capsys, tmp_path: Path) -> None:
    err = _run([*TRAIN, "--run-dir", str(tmp_path), "--resume", str(partial)], capsys)
    assert f"checkpoint: {partial} lacks 'iteration', 'frames', 'elapsed_s', 'last_episode', 'critic_norm'" in err


def test_play_a_checkpoint_that_lacks_keys(tmp_path: Path, no_env, capsys) -> None:
    path = tmp_path / "bare.pt"
    torch.save({"format": 2, "task": "cartpole", "config": {}}, path)
    err = _run(["play", "cartpole", "--checkpoint", str(path)], capsys)
    assert f"checkpoint: {path} lacks 'policy', 'obs_norm'" in err


@pytest.mark.parametrize("where", ["under a file", "under a file's path", "not mp4", "a directory"])
def test_a_video_that_could_not_be_written(checkpoint: Path, tmp_path: Path, no_env, capsys, where: str) -> None:
    file, folder = tmp_path / "notes.txt", tmp_path / "clip.mp4"
    file.write_text("not a directory")
    folder.mkdir()
    video, message = {
        "under a file": (file / "play.mp4", f"--video: {file} is a file, not a directory"),
        "under a file's path": (file / "x" / "play.mp4", f"--video: cannot write into {file / 'x'} (Not a directory)"),
        "not mp4": (tmp_path / "play.gif", "--video: must name an .mp4 file, got"),
        "a directory": (folder, f"--video: {folder} is a directory"),
    }[where]
    assert message in _run(["play", "cartpole", "--checkpoint", str(checkpoint), "--video", str(video)], capsys)


def test_a_video_without_its_encoder(checkpoint: Path, tmp_path: Path, no_env, capsys, monkeypatch) -> None:
    """Refused before the rollout (which a missing encoder failed after, with a traceback)."""
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # as if not installed
    err = _run(["play", "cartpole", "--checkpoint", str(checkpoint), "--video", str(tmp_path / "play.mp4")], capsys)
    assert "--video: an .mp4 needs imageio-ffmpeg, which is not installed: pip install imageio-ffmpeg" in err


def test_a_play_logger_without_a_video(checkpoint: Path, no_env, capsys) -> None:
    err = _run(["play", "cartpole", "--checkpoint", str(checkpoint), "--logger", "wandb"], capsys)
    assert "--logger: it says where the video goes; give --video FILE.mp4 too" in err


def test_num_envs_far_beyond_memory_is_refused_before_allocating(capsys, tmp_path: Path) -> None:
    err = _run(["train", "cartpole", "--device", "cpu", "--num-envs", str(10**10), "--run-dir", str(tmp_path)], capsys)
    assert "--num-envs: 10000000000 envs need at least" in err and "GiB for the physics state alone" in err
    assert "envs fit there" in err


@pytest.mark.parametrize("length", [0.0, -1.0, float("nan")])
def test_episode_length_must_be_positive(length: float) -> None:
    cfg = env_cfg("cartpole")
    cfg.episode_length_s = length
    with pytest.raises(ConfigError, match=rf"episode_length_s: must be a finite number > 0 seconds, got {length}"):
        phalanx.make(cfg, num_envs=2, device="cpu", verbose=False)


def test_an_image_group_the_env_lacks_is_named(capsys, tmp_path: Path) -> None:
    err = _run([*TRAIN, "--run-dir", str(tmp_path / "run"), "--policy.image-group", "image"], capsys)
    assert "--policy.image-group: 'image': expected an observation group of (H, W, C) images, got no such group" in err


BAD_MODELS = {
    "missing": (None, "no such file"),
    "folder": (None, "is a directory, not a model file"),
    "truncated.xml": (lambda text: text[:300], "MuJoCo cannot read it: XML parse error"),
    "include.xml": (lambda text: '<mujoco><include file="nope.xml"/></mujoco>', "Error opening file 'nope.xml'"),
    "robot.urdf": (
        lambda text: (
            '<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
            '<child link="b"/></joint></robot>'
        ),
        "URDF joint parent or child missing",
    ),
}


@pytest.mark.parametrize("name", list(BAD_MODELS))
def test_a_bad_model_file_is_one_line_naming_it(name: str, capsys, tmp_path: Path) -> None:
    write, message = BAD_MODELS[name]
    model = tmp_path / name
    if name == "folder":
        model.mkdir()
    elif write is not None:
        model.write_text(write(Path(asset_path("cartpole.xml")).read_text()))
    run_dir = tmp_path / "run"
    err = _run([*TRAIN, "--env.model", str(model), "--run-dir", str(run_dir)], capsys)
    assert err.startswith(f"phalanx train: error: --env.model: {model}") and message in err, err
    assert not (run_dir / "config.json").exists()


@pytest.mark.parametrize(
    ("task", "flag", "what"),
    [("cartpole", "njmax-per-env", "constraint rows"), ("ant", "nconmax-per-env", "contacts")],
)
def test_an_empty_physics_buffer_the_model_needs_is_refused(
    task: str, flag: str, what: str, capsys, tmp_path: Path
) -> None:
    """MuJoCo Warp skips a stage whose buffer is empty, silently (the ant fell through the floor)."""
    args = ["train", task, *TINY, "--max-iterations", "1", f"--env.sim.{flag}", "0", "--run-dir", str(tmp_path)]
    err = _run(args, capsys)
    assert f"--env.sim.{flag}: 0 holds no {what}, and this model may need up to" in err, err


def test_an_empty_contact_buffer_is_fine_without_contacts(tmp_path: Path) -> None:
    """cartpole's contacts are off: its contact bound is 0."""
    args = ["train", "cartpole", *TINY, "--max-iterations", "1", "--env.sim.nconmax-per-env", "0"]
    assert main([*args, "--run-dir", str(tmp_path)]) == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--seed", "7"], "--seed: the checkpoint was trained with seed 42, this run has 7"),
        (["--num-steps-per-env", "16"], "--num-steps-per-env: the checkpoint was trained with num_steps_per_env 8"),
        (["--empirical-normalization"], "--empirical-normalization: the checkpoint was trained with empirical_norm"),
    ],
)
def test_resume_with_another_seed_rollout_or_normalizer_is_refused(
    flags: list[str], message: str, checkpoint: Path, no_env, capsys, tmp_path: Path
) -> None:
    args = [*TRAIN, "--run-dir", str(tmp_path), "--resume", str(checkpoint), *flags]
    if "--num-steps-per-env" in flags:
        args.remove("8")  # TRAIN's own --num-steps-per-env 8
        args.remove("--num-steps-per-env")
    assert message in _run(args, capsys)


BAD_VALUES = [
    (["--seed", str(2**64)], f"--seed: must be an integer in [0, 2^63), got {2**64}"),
    (["--seed", "-1"], "--seed: must be an integer in [0, 2^63), got -1"),
    (["--env.rewards.alive.weight", "nan"], "--env.rewards.alive.weight: must be a finite number, got nan"),
    (["--env.actions.scale", "inf"], "--env.actions.scale: must be a finite number, got inf"),
    (["--env.actions.clip", "-1"], "--env.actions.clip: must be a finite number > 0, got -1.0"),
    (
        ["--env.observations.policy.pole-pos.scale", "nan"],
        "--env.observations.policy.pole-pos.scale: must be a finite number, got nan",
    ),
]


@pytest.mark.parametrize(("flags", "message"), BAD_VALUES, ids=[" ".join(f) for f, _ in BAD_VALUES])
def test_a_bad_value_is_refused_before_any_env(flags: list[str], message: str, no_env, capsys, tmp_path) -> None:
    assert message in _run([*TRAIN, "--run-dir", str(tmp_path), *flags], capsys)


@pytest.mark.parametrize(
    ("task", "seed", "field"), [(None, 0, "task"), ("cartpole", "x", "seed"), ("cartpole", 2**64, "seed")]
)
def test_make_refuses_bad_arguments_by_name(task, seed, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: "):
        phalanx.make(task, num_envs=2, device="cpu", seed=seed)


def test_a_run_dir_name_too_long_for_the_filesystem(no_env, capsys, tmp_path: Path) -> None:
    err = _run([*TRAIN, "--run-dir", str(tmp_path / ("a" * 300))], capsys)
    assert "--run-dir: a name in it is 300 bytes long; at most 255" in err


def test_bench_train_args_with_a_stray_quote(capsys) -> None:
    err = _run(["bench", "throughput", "cartpole", "--device", "cpu", "--train-args=--seed '3"], capsys)
    assert '--train-args: no closing quotation in "--seed \'3"' in err


def test_bench_report_on_a_broken_bench_json(tmp_path: Path, capsys) -> None:
    (tmp_path / "bench.json").write_text('{"results": [')
    err = _run(["bench", "report", str(tmp_path)], capsys)
    assert f"bench report: {tmp_path / 'bench.json'} is not readable JSON" in err
    (tmp_path / "bench.json").write_text("[1, 2]")
    assert "is not a phalanx bench.json" in _run(["bench", "report", str(tmp_path)], capsys)


def test_train_refuses_an_unknown_setting_by_name() -> None:
    with pytest.raises(ConfigError, match="phalanx.train: no setting 'bogus'; TrainCfg has"):
        phalanx.train("cartpole", bogus=1)
    with pytest.raises(ConfigError, match="^task: a registered task's name or a phalanx.TaskCfg, got NoneType"):
        phalanx.train(None)


def test_a_logger_whose_library_is_missing_is_refused_before_anything_is_written(
    monkeypatch, no_env, capsys, tmp_path: Path
) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else find_spec(name, *a))
    err = _run([*TRAIN, "--logger", "wandb", "--run-dir", str(tmp_path / "run")], capsys)
    assert "--logger: got 'wandb', which needs the wandb package: pip install -e '.[wandb]'" in err
    assert not (tmp_path / "run").exists()  # the re-run is not refused as "already holds a run"
