"""`phalanx train TASK --config FILE`: a run's settings trained again, or a file's changes to the
task's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.cli import main

QUICK = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "2"]


def _config(run: Path) -> dict:
    return json.loads((run / "config.json").read_text())


def test_a_run_trains_again_with_its_settings_and_later_flags_on_top(tmp_path: Path) -> None:
    first = tmp_path / "first"
    changed = ["--seed", "5", "--algo.learning-rate", "0.0007", "--env.rewards.alive.weight", "3"]
    assert main(["train", "cartpole", *QUICK, *changed, "--run-dir", str(first)]) == 0
    again = tmp_path / "again"
    flags = ["--config", str(first / "config.json"), "--max-iterations", "1", "--run-dir", str(again)]
    assert main(["train", "cartpole", *flags]) == 0
    before, after = _config(first), _config(again)
    assert after["max_iterations"] == 1 and after["run_dir"] == str(again)
    assert {k: v for k, v in after.items() if k not in ("max_iterations", "run_dir")} == {
        k: v for k, v in before.items() if k not in ("max_iterations", "run_dir")
    }
    assert after["seed"] == 5 and after["algo"]["learning_rate"] == 0.0007
    assert after["env"]["rewards"]["alive"]["weight"] == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--config: cannot read"),
        ("{", "is not JSON"),
        ("[1]", "holds a list, not settings by name"),
        ('{"env": 3}', "env: expected settings by name, got 3"),
        ('{"task": "ant", "env": {}}', "trained 'ant', not 'cartpole'"),
        ('{"algo": {"learning_rate": "fast"}}', "config.algo.learning_rate"),
        ("yaml:seed: [1", "is not YAML (while parsing a flow sequence"),
        ("yaml:- 1", "holds a list, not settings by name"),
    ],
)
def test_a_bad_config_file_is_refused_in_one_line(tmp_path: Path, content: str | None, message: str, capsys) -> None:
    path = tmp_path / ("config.yaml" if content and content.startswith("yaml:") else "config.json")
    if content is not None:
        path.write_text(content.removeprefix("yaml:"))
    assert main(["train", "cartpole", "--config", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("phalanx train: error: --config: ") and message in err
    assert not (tmp_path / "run").exists(), "nothing written"


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_of_some_settings_changes_those_of_the_task(tmp_path: Path, suffix: str) -> None:
    """A hand-written file names only what it changes (the task's registered settings for the
    rest, flags on top), in YAML or JSON."""
    changes = {"seed": 7, "algo": {"learning_rate": 0.0005}, "env": {"rewards": {"alive": {"weight": 2.5}}}}
    path = tmp_path / f"mine{suffix}"
    if suffix == ".yaml":
        path.write_text("seed: 7\nalgo:\n  learning_rate: 0.0005\nenv:\n  rewards:\n    alive:\n      weight: 2.5\n")
    else:
        path.write_text(json.dumps(changes))
    plain, mine = tmp_path / "plain", tmp_path / "mine"
    assert main(["train", "cartpole", *QUICK, "--run-dir", str(plain)]) == 0
    assert (
        main(["train", "cartpole", *QUICK, "--config", str(path), "--num-steps-per-env", "5", "--run-dir", str(mine)])
        == 0
    )
    before, after = _config(plain), _config(mine)
    assert after["seed"] == 7 and after["algo"]["learning_rate"] == 0.0005 and after["num_steps_per_env"] == 5
    assert after["env"]["rewards"]["alive"]["weight"] == 2.5
    after["env"]["rewards"]["alive"]["weight"] = before["env"]["rewards"]["alive"]["weight"]
    assert after["env"] == before["env"], "the rest of the env is the task's"
    assert after["algo"] | {"learning_rate": before["algo"]["learning_rate"]} == before["algo"]
