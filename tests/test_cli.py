"""`phalanx list` and `python -m phalanx`."""

from __future__ import annotations

import subprocess
import sys

from phalanx.cli import main


def test_list_shows_every_task_with_its_dims(capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name, obs, actions in [
        ("cartpole", "policy 4", "1"),
        ("ant", "policy 60", "8"),
        ("humanoid", "policy 87", "21"),
    ]:
        line = next(line for line in out.splitlines() if f" {name} " in line)
        assert obs in line and f" {actions} " in line and "8.33 ms" in line


def test_python_dash_m_and_bad_subcommand() -> None:
    ok = subprocess.run([sys.executable, "-m", "phalanx", "list"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "humanoid" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "phalanx", "lst"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
