"""`phalanx train TASK --config RUN/config.json`: a run's settings, trained again."""

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
        ('{"task": "cartpole"}', "is not a run's config.json (no 'env' settings)"),
        ('{"task": "ant", "env": {}}', "trained 'ant', not 'cartpole'"),
    ],
)
def test_a_bad_config_file_is_refused_in_one_line(tmp_path: Path, content: str | None, message: str, capsys) -> None:
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    assert main(["train", "cartpole", "--config", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("phalanx train: error: --config: ") and message in err
    assert not (tmp_path / "run").exists(), "nothing written"
