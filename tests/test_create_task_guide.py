"""docs/create_task.md works as written: its files, installed as a throwaway package (an entry
point in the group `phalanx.tasks`, found through importlib metadata), give a task that
`phalanx list` shows, `phalanx train` trains with a flag override, and `phalanx play` plays."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

GUIDE = Path(__file__).parents[1] / "docs" / "create_task.md"


def _install_guide(root: Path) -> None:
    """The guide's files under `root`, plus the metadata `pip install` would write for its pyproject."""
    files = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", GUIDE.read_text(), re.S)
    assert {name for name, _ in files} >= {"my_reacher/reacher.xml", "my_reacher/task.py", "pyproject.toml"}
    for name, body in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    entry = re.search(r'\[project.entry-points."phalanx.tasks"\]\n(\w+) = "([\w.]+)"', GUIDE.read_text())
    info = root / "my_reacher-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-reacher\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[phalanx.tasks]\n{entry.group(1)} = {entry.group(2)}\n")


def _phalanx(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_guide_task_lists_trains_and_plays(tmp_path: Path) -> None:
    _install_guide(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    light = "import sys, my_reacher.task; assert 'warp' not in sys.modules, 'the task file loads Warp'"
    imported = subprocess.run([sys.executable, "-c", light], env=env, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr  # `phalanx list` with the package installed stays light
    listed = _phalanx(tmp_path, "list")
    assert listed.returncode == 0 and "reacher" in listed.stdout and "my_reacher.task" in listed.stdout, listed.stderr
    run = tmp_path / "runs" / "reacher"
    flags = ["--device", "cpu", "--num-envs", "16", "--max-iterations", "2", "--run-dir", str(run)]
    trained = _phalanx(tmp_path, "train", "reacher", *flags, "--env.rewards.action-l2.weight", "-0.05")
    assert trained.returncode == 0, trained.stderr[-2000:]
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["rewards"]["action_l2"]["weight"] == -0.05
    assert config["env"]["rewards"]["distance"]["func"] == "my_reacher.task:fingertip_distance"
    video = tmp_path / "reacher.mp4"  # the guide's last step: its model has no camera of its own
    played = _phalanx(tmp_path, "play", "reacher", "--checkpoint", str(run / "checkpoints" / "model_last.pt"),
                      "--device", "cpu", "--num-envs", "4", "--steps", "20", "--video", str(video))  # fmt: skip
    assert played.returncode == 0 and "episodes finished" in played.stdout, played.stderr
    assert video.stat().st_size > 1000


def test_the_guides_urdf_robot_trains_and_plays_with_a_video(tmp_path: Path) -> None:
    _install_guide(tmp_path)
    run, module = tmp_path / "runs" / "reacher-urdf", ["--module", "my_reacher/urdf_task.py"]
    flags = ["--device", "cpu", "--num-envs", "16", "--max-iterations", "2", "--run-dir", str(run)]
    trained = _phalanx(tmp_path, "train", "reacher-urdf", *module, *flags)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "reacher.urdf" in json.loads((run / "config.json").read_text())["env"]["model"]
    urdf = tmp_path / "my_reacher" / "reacher.urdf"
    urdf.rename(tmp_path / "elsewhere.urdf")  # the URDF travels in the checkpoint: play needs no file
    video = tmp_path / "reacher-urdf.mp4"
    played = _phalanx(tmp_path, "play", "reacher-urdf", *module, "--checkpoint", str(run), "--device", "cpu",
                      "--num-envs", "4", "--steps", "20", "--video", str(video))  # fmt: skip
    assert played.returncode == 0 and "episodes finished" in played.stdout, played.stderr[-2000:]
    assert video.stat().st_size > 1000


def test_the_guide_imports_only_the_public_surface() -> None:
    """A task file needs `phalanx` and `phalanx.cfg` only, and only names they export: a guide
    that reaches into a private module (phalanx.envs.cfg, phalanx.rl.cfg, ...) fails here."""
    import ast

    import phalanx
    import phalanx.cfg

    public = {"phalanx": set(phalanx.__all__), "phalanx.cfg": set(phalanx.cfg.__all__)}
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    seen = []
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Import):
                modules = [(alias.name, None) for alias in node.names if alias.name.startswith("phalanx")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("phalanx"):
                modules = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in modules:
                seen.append(module)
                assert module in public, f"the guide imports {module}: only phalanx and phalanx.cfg are public"
                assert name is None or name in public[module], f"{module} does not export {name}"
    assert "phalanx.cfg" in seen


def test_the_guide_s_earlier_imports_work_for_one_release() -> None:
    """The modules an earlier version of the guide imported from still give the same classes; the
    one that moved says so with a DeprecationWarning."""
    import importlib
    import sys
    import warnings

    import phalanx.cfg

    sys.modules.pop("phalanx.rl.config", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("phalanx.rl.config")
    assert old.PolicyCfg is phalanx.cfg.PolicyCfg and old.PPOCfg is phalanx.cfg.PPOCfg
    assert any(issubclass(w.category, DeprecationWarning) and "phalanx.cfg" in str(w.message) for w in caught)
    earlier = {
        "phalanx.envs": ["CommandTerm", "CommandTermCfg", "MetricTermCfg", "ObsTermCfg", "RewardTermCfg", "TaskCfg"],
        "phalanx.envs.cfg": ["ActionCfg"],
        "phalanx.rl.ppo": ["PPOCfg"],
        "phalanx.sim.actuators": ["ActuatorCfg"],
        "phalanx.sim.cfg": ["SimCfg"],
    }
    for module, names in earlier.items():
        for name in names:
            assert getattr(importlib.import_module(module), name) is getattr(phalanx.cfg, name), (module, name)
    from phalanx.envs.mdp import bodies, observations, rewards, terminations  # noqa: F401
