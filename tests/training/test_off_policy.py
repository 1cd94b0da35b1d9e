"""`phalanx train TASK --algo td3|sac`: FastTD3 and FastSAC learn cartpole on the CPU, their
checkpoints play and export, a run's config.json reruns it, and what they do not do yet is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from phalanx.cli import main
from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg
from phalanx.training.registry import term_packages, train_cfg
from phalanx.training.settings_file import train_cfg_from_file

SMALL = ["--algo.actor-hidden-dims", "128", "128", "--algo.critic-hidden-dims", "256", "256"]
SMALL += ["--algo.batch-size", "1024", "--algo.buffer-size", "2000", "--algo.n-step", "3", "--empirical-normalization"]


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_off_policy_learns_cartpole_on_the_cpu(algo: str, tmp_path: Path) -> None:
    """64 envs, smaller networks and batches than the GPU defaults, 3-step returns: the episodes
    reach 95 % of the 300-step maximum, and the trained actor plays and exports."""
    args = ["train", "cartpole", "--algo", algo, "--device", "cpu", "--num-envs", "64", "--max-iterations", "60"]
    assert main([*args, *SMALL, "--run-dir", str(tmp_path), "--logger", "none"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert max(r.get("mean_episode_length", 0.0) for r in rows) >= 0.95 * 300
    assert {"loss/critic", "loss/actor", "learner/q_target", "fps_total", "action_std"} <= set(rows[-1])
    assert main(["play", "cartpole", "--checkpoint", str(tmp_path), "--steps", "300", "--device", "cpu"]) == 0
    assert main(["export", "cartpole", "--checkpoint", str(tmp_path), "--format", "torchscript"]) == 0


def test_a_td3_runs_config_reruns_it(tmp_path: Path) -> None:
    """config.json holds the TD3 settings (the task's registered ones, as flags changed them)."""
    args = ["train", "cartpole", "--algo", "td3", "--device", "cpu", "--num-envs", "8", "--max-iterations", "1"]
    assert main([*args, "--num-steps-per-env", "2", *SMALL, "--algo.n-step", "2", "--run-dir", str(tmp_path)]) == 0
    cfg = train_cfg_from_file(str(tmp_path / "config.json"), "cartpole", term_packages(), train_cfg("cartpole"))
    assert isinstance(cfg.algo, TD3Cfg)
    assert (cfg.algo.n_step, cfg.algo.v_max, cfg.algo.actor_hidden_dims) == (2, 100.0, (128, 128))


def test_a_sac_runs_config_reruns_it(tmp_path: Path) -> None:
    args = ["train", "cartpole", "--algo", "sac", "--device", "cpu", "--num-envs", "8", "--max-iterations", "1"]
    assert (
        main([*args, "--num-steps-per-env", "2", *SMALL, "--algo.alpha-init", "0.05", "--run-dir", str(tmp_path)]) == 0
    )
    cfg = train_cfg_from_file(str(tmp_path / "config.json"), "cartpole", term_packages(), train_cfg("cartpole"))
    assert isinstance(cfg.algo, SACCfg) and cfg.algo.alpha_init == 0.05


def test_a_replay_buffer_larger_than_memory_is_refused(tmp_path: Path, capsys) -> None:
    args = ["train", "cartpole", "--algo", "td3", "--device", "cpu", "--num-envs", "16", "--max-iterations", "1"]
    assert main([*args, "--algo.buffer-size", "10000000000", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--algo.buffer-size: the replay buffer needs" in err, err


TINY = ["cartpole", "--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--logger", "none"]
TINY += ["--algo.batch-size", "32", "--algo.buffer-size", "50", "--algo.learning-starts", "2"]
TINY += ["--algo.actor-hidden-dims", "16", "--algo.critic-hidden-dims", "16", "--empirical-normalization"]


def _nested_equal(a, b, where: str = "") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _nested_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b, where


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_a_run_with_its_buffer_resumes_exactly(algo: str, tmp_path: Path) -> None:
    """4 iterations straight == 2, then --resume last for 2 more, with --algo.checkpoint-buffer:
    the same learner (networks, optimizers, normalizers, exploration state) and buffer."""
    tiny = [*TINY, "--algo", algo, "--algo.checkpoint-buffer", "--save-interval", "2"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert main(["train", *tiny, "--max-iterations", "4", "--run-dir", str(straight)]) == 0
    assert main(["train", *tiny, "--max-iterations", "2", "--run-dir", str(split)]) == 0
    assert main(["train", *tiny, "--max-iterations", "4", "--run-dir", str(split), "--resume", "last"]) == 0
    a, b = (torch.load(run / "checkpoints" / "model_4.pt", weights_only=True) for run in (straight, split))
    _nested_equal(a["off_policy"], b["off_policy"], "off_policy")
    _nested_equal(a["ranks"][0]["env"], b["ranks"][0]["env"], "env")
    buffers = [torch.load(run / "checkpoints" / "replay_last.rank0.pt", weights_only=True) for run in (straight, split)]
    _nested_equal(buffers[0], buffers[1], "buffer")


def test_a_run_without_its_buffer_resumes_with_a_warning(tmp_path: Path, capsys) -> None:
    assert main(["train", *TINY, "--algo", "td3", "--max-iterations", "2", "--run-dir", str(tmp_path)]) == 0
    assert (
        main(["train", *TINY, "--algo", "td3", "--max-iterations", "3", "--run-dir", str(tmp_path), "--resume", "last"])
        == 0
    )
    out = capsys.readouterr().out
    assert "resumed without the replay buffers (rank 0: none was saved" in out and "resumed from" in out


def test_resuming_with_another_algorithm_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["train", *TINY, "--algo", "td3", "--max-iterations", "1", "--run-dir", str(tmp_path)]) == 0
    args = ["train", *TINY, "--algo", "sac", "--max-iterations", "2", "--run-dir", str(tmp_path), "--resume", "last"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "--algo: the checkpoint was trained with --algo td3, this run asks for sac" in err, err
    hidden = ["--algo", "td3", "--algo.critic-hidden-dims", "8", "--max-iterations", "2", "--resume", "last"]
    assert main(["train", *TINY, *hidden, "--run-dir", str(tmp_path)]) == 2
    assert (
        "--algo.critic-hidden-dims: the checkpoint's network has (16,), this run asks for (8,)"
        in capsys.readouterr().err
    )


def test_a_pixel_task_is_refused_before_anything_is_built(tmp_path: Path, capsys) -> None:
    args = ["train", "cartpole-rgb", "--algo", "sac", "--device", "cpu", "--run-dir", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--algo sac does not support image observations yet" in err, err
    assert not (tmp_path / "run").exists()
