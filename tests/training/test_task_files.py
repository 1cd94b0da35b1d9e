"""A task file trains without packaging: `--module my_task.py` loads it in every command, and in
the processes a command starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TASK_FILE = """
import phalanx
from phalanx.tasks.cartpole import cartpole_cfg, cartpole_train_cfg


def my_pole_cfg():
    cfg = cartpole_cfg()
    cfg.name = "my-pole"
    return cfg


phalanx.register("my-pole", env_cfg=my_pole_cfg, train_cfg=cartpole_train_cfg)
"""


def _phalanx(cwd: Path, *args: str, task_files: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PHALANX_TASK_FILES"} | {"PHALANX_TASK_FILES": task_files}
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_task_file_lists_trains_and_plays(tmp_path: Path) -> None:
    (tmp_path / "my_pole.py").write_text(TASK_FILE)
    listed = _phalanx(tmp_path, "list", "--module", "my_pole.py")
    assert listed.returncode == 0 and "my-pole" in listed.stdout, listed.stderr
    inherited = _phalanx(tmp_path, "list", task_files=str(tmp_path / "my_pole.py"))  # as a started process
    assert inherited.returncode == 0 and "my-pole" in inherited.stdout, inherited.stderr
    quick = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "2"]
    trained = _phalanx(tmp_path, "train", "my-pole", "--module=my_pole.py", *quick, "--run-dir", "run")
    assert trained.returncode == 0, trained.stderr[-2000:]
    played = _phalanx(tmp_path, "play", "my-pole", "--module", "my_pole.py", "--checkpoint", "run", "--steps", "5")
    assert played.returncode == 0 and "episodes finished" in played.stdout, played.stderr[-2000:]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.py", None, "--module: got 'missing.py'; allowed: a Python file (.py) that calls phalanx.register"),
        (
            "tasks/json.py",
            TASK_FILE,
            "--module: tasks/json.py: the module name 'json' is taken or not a Python name; rename the file",
        ),
    ],
)
def test_a_bad_task_file_is_refused_in_one_line(tmp_path: Path, name: str, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(content)
    out = _phalanx(tmp_path, "list", "--module", name)
    assert out.returncode == 2 and out.stderr.strip() == f"phalanx list: error: {message}", out.stderr
