"""`phalanx train --trainer X` and `--logger`: another library's run lands in phalanx's run directory
layout with the same metrics rows, a missing library is one line naming the pip install, flags
that only phalanx's trainer supports are refused, and Weights & Biases logs offline."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import torch
from rich.console import Console

import phalanx
from phalanx.cli import main
from phalanx.dist import DistContext
from phalanx.training.libraries import ADAPTERS
from phalanx.training.logger import RunLogger
from phalanx.training.metered import MeteredEnv

FPS = ("fps_step", "fps_step_inference", "fps_total")


def _rows(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_library_trains_into_phalanxs_run_directory(tmp_path, capfd, monkeypatch) -> None:
    rsl_rl = pytest.importorskip("rsl_rl")
    install = tmp_path / "site-packages"  # rsl_rl installed inside a git repository, as on some machines
    git = ["git", "-C", str(install), "-c", "user.name=t", "-c", "user.email=t@t"]
    (install / "rsl_rl").mkdir(parents=True)
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "t"], check=True)
    (install / "rsl_rl" / "__init__.py").touch()
    monkeypatch.setattr(rsl_rl, "__file__", str(install / "rsl_rl" / "__init__.py"))
    run_dir = tmp_path / "run"
    trainer = phalanx.train(
        "cartpole", trainer="rsl_rl", device="cpu", num_envs=32, max_iterations=3, run_dir=str(run_dir), logger="none"
    )
    assert trainer is None
    rows = _rows(run_dir)
    assert [row["iteration"] for row in rows] == [0, 1, 2]
    assert [row["frames"] for row in rows] == [32 * 16, 2 * 32 * 16, 3 * 32 * 16]
    for row in rows:
        assert all(row[key] > 0 for key in FPS)
        # the rollout holds the steps, the iteration holds the rollout and the update
        assert row["fps_step"] >= row["fps_step_inference"] >= row["fps_total"]
    assert rows[-1]["episodes"] > 0 and "reward_terms/alive" in rows[-1]
    assert json.loads((run_dir / "config.json").read_text())["trainer"] == "rsl_rl"
    std = phalanx.train_cfg("cartpole").policy.init_noise_std
    assert all(row["action_std"] == pytest.approx(std, rel=0.2) for row in rows), "the library policy's std"
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["model_0.pt", "model_2.pt"], "nothing else"
    assert not list(run_dir.rglob("events.out.tfevents*")), "--logger none: no TensorBoard events, rsl_rl's neither"
    out = capfd.readouterr().out
    assert "Learning iteration" not in out and "\033[" not in out, "phalanx's line per iteration, not rsl_rl's block"
    model = run_dir / "checkpoints" / "model_2.pt"
    for args in [
        ["play", "cartpole", "--checkpoint", str(run_dir)],
        ["play", "cartpole", "--checkpoint", str(model)],
        ["export", "cartpole", "--checkpoint", str(run_dir)],
        ["train", "cartpole", "--device", "cpu", "--resume", str(run_dir)],
        ["train", "cartpole-rgb", "--device", "cpu", "--teacher", str(run_dir)],
    ]:
        assert main(args) == 2
        err = capfd.readouterr().err.strip()
        assert "trained with --trainer rsl_rl" in err and "OnPolicyRunner" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("trainer", ["rl_games", "skrl", "sb3"])
def test_every_library_logs_its_action_std(trainer: str, tmp_path) -> None:
    pytest.importorskip(trainer if trainer != "sb3" else "stable_baselines3")
    phalanx.train("cartpole", trainer=trainer, device="cpu", num_envs=32, max_iterations=2, run_dir=str(tmp_path))
    std = phalanx.train_cfg("cartpole").policy.init_noise_std
    assert [row["action_std"] == pytest.approx(std, rel=0.2) for row in _rows(tmp_path)] == [True, True]


def test_phalanxs_trainer_logs_the_action_std(tmp_path) -> None:
    phalanx.train("cartpole", device="cpu", num_envs=32, max_iterations=1, run_dir=str(tmp_path), logger="none")
    (row,) = _rows(tmp_path)
    assert row["action_std"] == pytest.approx(phalanx.train_cfg("cartpole").policy.init_noise_std, rel=0.05)


def test_a_missing_library_names_its_pip_install(monkeypatch, capsys, tmp_path) -> None:
    for name in [name for name in sys.modules if name == "rsl_rl" or name.startswith("rsl_rl.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "rsl_rl", None)  # import rsl_rl now fails
    monkeypatch.delitem(sys.modules, ADAPTERS["rsl_rl"], raising=False)
    status = main(["train", "cartpole", "--trainer", "rsl_rl", "--device", "cpu", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1
    assert "--trainer" in err and "pip install -e '.[rsl-rl]'" in err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--trainer", "stable-baselines"], "--trainer: got 'stable-baselines'; allowed: phalanx, rsl_rl"),
        (["--trainer", "sb3", "--gpus", "2"], "--gpus: --trainer sb3 trains on one device"),
        (["--trainer", "skrl", "--resume", "last", "--run-dir", "r"], "--resume: continues --trainer phalanx runs"),
        (["--logger", "mlflow"], "--logger: got 'mlflow'; allowed: tensorboard, wandb, none"),
    ],
)
def test_bad_trainer_flags_are_refused_before_anything_is_built(flags, named, capsys) -> None:
    assert main(["train", "cartpole", *flags]) == 2
    assert named in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.device_count() >= 2, reason="on 2 GPUs this would start the job")
def test_a_library_refuses_more_ranks_than_gpus(capsys) -> None:
    assert main(["train", "cartpole", "--trainer", "rsl_rl", "--gpus", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("phalanx train: error: --gpus: got '2', but --trainer rsl_rl runs one process per CUDA GPU")


@dataclasses.dataclass(frozen=True)
class _TwoRanks(DistContext):
    """Rank 0 of two ranks whose figures are alike: a sum over ranks doubles them."""

    sent: list[torch.Tensor] = dataclasses.field(default_factory=list)  # what was summed

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        self.sent.append(tensor.clone())
        return tensor.mul_(2)


def _metered_rows(run_dir, dist: DistContext | None) -> list[dict]:
    env = phalanx.make("cartpole", num_envs=16, device="cpu", seed=3)
    logger = RunLogger(run_dir, Console(quiet=True), logger="none")
    metered = MeteredEnv(env, steps_per_iteration=40, logger=logger, max_iterations=3, dist=dist)
    actions = torch.zeros(16, env.action_dim)
    for _ in range(3 * 40):
        metered.step(actions)
    metered.finish()
    logger.close()
    return _rows(run_dir)


def test_metered_rows_hold_every_ranks_figures(tmp_path) -> None:
    """Under torchrun a library's run reports fps, frames and episode counts summed over ranks and
    episode means and env logs as the ranks' means, as phalanx's trainer does."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    alone = _metered_rows(tmp_path / "one", None)
    two = _TwoRanks(rank=0, world_size=2)
    both = _metered_rows(tmp_path / "two", two)
    assert len(two.sent) == 3  # one sum per iteration
    for one, row, sent in zip(alone, both, two.sent, strict=True):
        assert row["frames"] == 2 * one["frames"]
        assert row["episodes"] == 2 * one["episodes"] > 0
        for key in ("mean_reward", "mean_episode_length", *(k for k in one if k.startswith(("env/", "reward_terms/")))):
            assert row[key] == pytest.approx(one[key]), key
        assert [row[key] for key in FPS] == pytest.approx((2 * sent[-3:]).tolist())


@pytest.fixture
def offline_wandb(monkeypatch, tmp_path) -> None:
    """wandb installed, and no login: no API key, no ~/.netrc entry."""
    pytest.importorskip("wandb")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_wandb_logs_offline_without_a_login(offline_wandb, tmp_path) -> None:
    run_dir = tmp_path / "run"
    phalanx.train("cartpole", device="cpu", num_envs=32, max_iterations=2, run_dir=str(run_dir), logger="wandb")
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    (record,) = offline.glob("*.wandb")
    data = record.read_bytes()
    assert b"fps_total" in data and b"action_std" in data  # the metrics
    assert b"num_steps_per_env" in data  # the hyperparameters


def test_play_logs_its_video_to_the_runs_wandb(offline_wandb, tmp_path) -> None:
    """A run trained with --logger wandb gets its play video in a wandb run beside it (RUN-play)."""
    run_dir = tmp_path / "run"
    phalanx.train("cartpole", device="cpu", num_envs=16, max_iterations=1, run_dir=str(run_dir), logger="wandb")
    checkpoint = run_dir / "checkpoints" / "model_last.pt"
    video = tmp_path / "play.mp4"
    assert main(["play", "cartpole", "--checkpoint", str(checkpoint), "--steps", "10", "--video", str(video)]) == 0
    assert len(list((run_dir / "wandb").glob("offline-run-*"))) == 2  # the training's and the play's
    (logged,) = (run_dir / "wandb").glob("offline-run-*/files/media/videos/play/video_*.mp4")
    assert logged.read_bytes() == video.read_bytes()
