"""The task layer: registration rules, the env config stored with every run and rebuilt by play
and resume, and what a stored config may name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import phalanx
import phalanx.training.registry
from phalanx.cli import main
from phalanx.core.errors import ConfigError
from phalanx.envs import ObsTermCfg
from phalanx.envs.mdp import observations
from phalanx.envs.stored_cfg import env_cfg_from_data, env_cfg_to_data

TINY = {"device": "cpu", "num_envs": 16, "num_steps_per_env": 8, "max_iterations": 2}


def test_a_task_without_training_defaults_is_refused() -> None:
    with pytest.raises(ConfigError, match="train_cfg is required"):
        phalanx.register("no-defaults", env_cfg=phalanx.env_cfg("cartpole"), train_cfg=None)
    with pytest.raises(ConfigError, match="lowercase letters and digits joined by dashes"):
        phalanx.register("Bad_Name", env_cfg=phalanx.env_cfg("cartpole"), train_cfg=phalanx.TrainCfg())
    assert "no-defaults" not in phalanx.registered_tasks()


def test_a_name_taken_by_another_module_is_refused() -> None:
    with pytest.raises(ConfigError, match="taken by a task registered in phalanx.tasks.cartpole"):
        phalanx.register("cartpole", env_cfg=phalanx.env_cfg("cartpole"), train_cfg=phalanx.TrainCfg())


def test_an_unregistered_task_with_an_extra_observation_trains_and_plays_back(tmp_path: Path, capsys) -> None:
    """Play rebuilds the env from the checkpoint: its extra term and override come back, though
    no registry knows this task."""
    env = phalanx.env_cfg("cartpole")
    env.name, env.episode_length_s = "my-cartpole", 2.0
    env.observations["policy"]["last_action"] = ObsTermCfg(func=observations.last_action)
    run = tmp_path / "run"
    trainer = phalanx.train(env, phalanx.train_cfg("cartpole"), run_dir=str(run), **TINY)
    assert trainer.env.observation_spec["policy"] == (5,)
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["observations"]["policy"]["last_action"]["func"] == "phalanx.envs.mdp.observations:last_action"
    checkpoint = run / "checkpoints" / "model_last.pt"
    assert main(["play", "my-cartpole", "--checkpoint", str(checkpoint), "--device", "cpu", "--num-envs", "4"]) == 0
    assert "max length 120" in capsys.readouterr().out  # 2 s episodes of 16.7 ms steps, as trained


def test_a_checkpoint_from_before_env_configs_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    old = tmp_path / "old.pt"
    torch.save({"task": "cartpole", "config": {}, "policy": {}, "obs_norm": {}}, old)
    assert main(["play", "cartpole", "--checkpoint", str(old)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "written by an older phalanx" in err


@pytest.mark.parametrize(
    "reference", ["os:system", "builtins:print", "subprocess:run", "phalanx.training.registry:make"]
)
def test_a_stored_config_names_only_terms(reference: str) -> None:
    data = env_cfg_to_data(phalanx.env_cfg("cartpole"))
    data["rewards"]["alive"]["func"] = reference
    with pytest.raises(ConfigError, match=rf"env.rewards.alive.func: {reference}.*refused"):
        env_cfg_from_data(data, "checkpoint x.pt")


def test_a_stored_term_from_a_module_that_registered_no_task_is_refused_unimported() -> None:
    data = env_cfg_to_data(phalanx.env_cfg("cartpole"))
    for reference in ("antigravity:geohash", "helpers:make_cpu"):  # not imported; imported, registered nothing
        data["rewards"]["alive"]["func"] = reference
        with pytest.raises(ConfigError, match=r"refused: stored terms come from phalanx or from the packages"):
            env_cfg_from_data(data, "checkpoint x.pt", phalanx.training.registry.term_packages())
    assert "antigravity" not in sys.modules


def alive_twice(env) -> torch.Tensor:
    """A term of this module, which registers a task below."""
    return 2.0 * observations.last_action(env)[:, 0]


def test_a_stored_term_from_a_module_that_registered_a_task_comes_back(monkeypatch) -> None:
    monkeypatch.setattr(
        phalanx.training.registry, "_TASKS", dict(phalanx.training.registry.registered_tasks())
    )  # undone after
    env = phalanx.env_cfg("cartpole")
    env.rewards["alive"].func = alive_twice
    phalanx.register("test-own-term", env_cfg=env, train_cfg=phalanx.train_cfg("cartpole"))
    packages = phalanx.training.registry.term_packages()
    assert env_cfg_from_data(env_cfg_to_data(env), "x.pt", packages).rewards["alive"].func is alive_twice


def test_a_checkpoint_naming_a_module_in_the_working_directory_runs_none_of_it(tmp_path: Path) -> None:
    """`python -m phalanx` (how torchrun starts ranks) puts the working directory first on the
    import path: a checkpoint naming a module there must not import it."""
    run = tmp_path / "run"
    phalanx.train("cartpole", run_dir=str(run), **TINY)
    checkpoint = run / "checkpoints" / "model_last.pt"
    state = torch.load(checkpoint, weights_only=True)
    state["config"]["env"]["rewards"]["alive"]["func"] = "mymod:alive"
    torch.save(state, checkpoint)
    marker = tmp_path / "imported"
    (tmp_path / "mymod.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef alive(env): return env\n")
    command = [sys.executable, "-m", "phalanx", "play", "cartpole", "--checkpoint", str(checkpoint), "--steps", "2"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "mymod:alive: refused" in done.stderr
    assert not marker.exists()


def test_stored_configs_round_trip_for_every_task() -> None:
    for name in phalanx.registered_tasks():
        cfg = phalanx.env_cfg(name)
        assert env_cfg_from_data(env_cfg_to_data(cfg), name) == cfg


@pytest.mark.parametrize("task", ["franka-cabinet", "franka-lift", "franka-reach-ik", "anymal-qp", "shadow-cube"])
def test_a_config_stored_before_its_terms_moved_still_loads(task: str) -> None:
    """Terms that moved from phalanx.envs.mdp into their task's package (CHANGELOG.md) come back from
    the names older checkpoints and config.json files store."""
    from phalanx.envs.stored_cfg import MOVED_MODULES

    data = json.dumps(env_cfg_to_data(phalanx.env_cfg(task)))
    old = data
    for before, now in MOVED_MODULES.items():
        old = old.replace(f'"{now}:', f'"{before}:')
    assert old != data, "the task stores none of the moved terms"
    assert json.dumps(env_cfg_to_data(env_cfg_from_data(json.loads(old), "old.pt"))) == data


def test_resume_keeps_the_checkpoints_env_and_refuses_flags_that_change_it(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    flags = ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--run-dir", str(run)]
    assert main(["train", "cartpole", *flags, "--max-iterations", "1", "--env.episode-length-s", "2"]) == 0
    changed = ["--max-iterations", "2", "--resume", "last", "--env.episode-length-s", "3"]
    assert main(["train", "cartpole", *flags, *changed]) == 2
    assert "--env: a resumed run continues in its checkpoint's env" in capsys.readouterr().err
    assert main(["train", "cartpole", *flags, "--max-iterations", "2", "--resume", "last"]) == 0
    assert json.loads((run / "config.json").read_text())["env"]["episode_length_s"] == 2.0


def test_the_env_count_has_one_home_per_device() -> None:
    """A task's env count is its env config's, per device (`num_envs` on a GPU, `cpu_num_envs` on
    the CPU); `make` and `phalanx train` take it where `num_envs` / `--num-envs` is not given."""
    cfg = phalanx.env_cfg("cartpole")
    cfg.num_envs, cfg.cpu_num_envs = 4096, 8
    assert cfg.default_num_envs(torch.device("cuda")) == 4096 and cfg.default_num_envs(torch.device("cpu")) == 8
    assert phalanx.make(cfg, device="cpu").num_envs == 8
    assert phalanx.env_cfg("shadow-cube").cpu_num_envs == 64


def test_a_task_that_sets_the_deprecated_train_cpu_num_envs_still_gets_it(monkeypatch) -> None:
    registry = phalanx.training.registry
    monkeypatch.setattr(registry, "_TASKS", dict(registry.registered_tasks()))  # undone after
    phalanx.register(
        "cartpole-old-style",
        env_cfg=lambda: phalanx.env_cfg("cartpole"),
        train_cfg=lambda: phalanx.TrainCfg(cpu_num_envs=12),
    )
    with pytest.warns(DeprecationWarning, match="TrainCfg.cpu_num_envs is deprecated"):
        cfg = phalanx.train_cfg("cartpole-old-style")
    assert cfg.env.cpu_num_envs == 12 and cfg.cpu_num_envs is None
