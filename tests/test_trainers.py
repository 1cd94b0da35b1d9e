"""`phalanx train --trainer X` and `--logger`: another library's run lands in phalanx's run directory
layout with the same metrics rows, a missing library is one line naming the pip install, flags
that only phalanx's trainer supports are refused, and Weights & Biases logs offline."""

from __future__ import annotations

import json
import sys

import pytest

import phalanx
from phalanx.cli import main
from phalanx.wrappers.trainers import ADAPTERS

FPS = ("fps_step", "fps_step_inference", "fps_total")


def _rows(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_library_trains_into_phalanxs_run_directory(tmp_path) -> None:
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
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("model_*.pt")) == ["model_0.pt", "model_2.pt"]
    assert not list(run_dir.glob("events.out.tfevents*")), "--logger none writes no TensorBoard events"


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
    assert "--trainer" in err and "pip install -e '.[rsl_rl]'" in err


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


def test_wandb_logs_offline_without_a_login(monkeypatch, tmp_path) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc login
    for name in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "run"
    phalanx.train("cartpole", device="cpu", num_envs=32, max_iterations=2, run_dir=str(run_dir), logger="wandb")
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    (record,) = offline.glob("*.wandb")
    data = record.read_bytes()
    assert b"fps_total" in data and b"action_std" in data  # the metrics
    assert b"num_steps_per_env" in data  # the hyperparameters
