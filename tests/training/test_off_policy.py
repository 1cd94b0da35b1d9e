"""`phalanx train TASK --algo td3|sac`: FastTD3 and FastSAC learn cartpole on the CPU, their
checkpoints play and export, a run's config.json reruns it, and what they do not do yet is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.cli import main
from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg
from phalanx.training.registry import term_packages
from phalanx.training.run_config import train_cfg_from_file

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
    cfg = train_cfg_from_file(str(tmp_path / "config.json"), "cartpole", term_packages())
    assert isinstance(cfg.algo, TD3Cfg)
    assert (cfg.algo.n_step, cfg.algo.v_max, cfg.algo.actor_hidden_dims) == (2, 100.0, (128, 128))


def test_a_sac_runs_config_reruns_it(tmp_path: Path) -> None:
    args = ["train", "cartpole", "--algo", "sac", "--device", "cpu", "--num-envs", "8", "--max-iterations", "1"]
    assert (
        main([*args, "--num-steps-per-env", "2", *SMALL, "--algo.alpha-init", "0.05", "--run-dir", str(tmp_path)]) == 0
    )
    cfg = train_cfg_from_file(str(tmp_path / "config.json"), "cartpole", term_packages())
    assert isinstance(cfg.algo, SACCfg) and cfg.algo.alpha_init == 0.05


def test_a_replay_buffer_larger_than_memory_is_refused(tmp_path: Path, capsys) -> None:
    args = ["train", "cartpole", "--algo", "td3", "--device", "cpu", "--num-envs", "16", "--max-iterations", "1"]
    assert main([*args, "--algo.buffer-size", "10000000000", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--algo.buffer-size: the replay buffer needs" in err, err
