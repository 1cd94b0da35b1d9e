"""Checkpoints hold no path of the install or the files that trained them: phalanx's assets go by
reference, a user's model file (its includes and meshes) travels inside the checkpoint and in
the run directory, so a policy plays after either is gone."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import torch

import phalanx
from phalanx.cli import main
from phalanx.sim.model import load_model
from phalanx.sim.model_files import MODEL_XML, pack_model

TINY = {"device": "cpu", "num_envs": 16, "num_steps_per_env": 8, "max_iterations": 2}
CARTPOLE = Path(phalanx.__file__).parent / "assets" / "cartpole.xml"


def test_a_checkpoint_plays_after_the_install_that_wrote_it_is_gone(tmp_path: Path, capsys) -> None:
    install = tmp_path / "install"
    shutil.copytree(Path(phalanx.__file__).parent, install / "phalanx", ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--device", "cpu", "--num-envs", "16"]
    command += ["--max-iterations", "2", "--run-dir", str(run)]
    done = subprocess.run(
        command, env=os.environ | {"PYTHONPATH": str(install)}, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert str(install) not in (run / "config.json").read_text()
    shutil.rmtree(install)
    checkpoint = run / "checkpoints" / "model_last.pt"
    assert main(["play", "cartpole", "--checkpoint", str(checkpoint), "--device", "cpu", "--num-envs", "2"]) == 0
    assert "episodes finished" in capsys.readouterr().out


def test_a_config_naming_an_asset_by_another_installs_path_loads() -> None:
    env = phalanx.env_cfg("cartpole")
    env.model = "/gone/lib/python3.11/site-packages/phalanx/assets/cartpole.xml"  # configs before references
    assert phalanx.make(env, num_envs=2, device="cpu", verbose=False).num_envs == 2


def write_user_model(folder: Path) -> Path:
    """cartpole.xml split over a model file, an included file and a mesh on the cart (weightless,
    colliding with nothing: the same dynamics)."""
    (folder / "meshes").mkdir(parents=True)
    corners = [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)]
    with (folder / "meshes" / "marker.stl").open("wb") as stl:
        stl.write(b"\0" * 80 + struct.pack("<I", 4))
        for face in ((0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)):
            stl.write(struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *corners[i]) for i in face) + b"\0\0")
    xml = CARTPOLE.read_text()
    actuator = xml[xml.index("  <actuator>") : xml.index("</mujoco>")]
    (folder / "actuators.xml").write_text(f"<mujoco>\n{actuator}</mujoco>\n")
    xml = xml.replace(actuator, '  <include file="actuators.xml"/>\n')
    xml = xml.replace(
        'autolimits="true"/>', 'autolimits="true" meshdir="meshes"/>\n  <asset><mesh file="marker.stl"/></asset>'
    )
    marker = '<geom type="mesh" mesh="marker" mass="0" contype="0" conaffinity="0"/>'
    xml = xml.replace('rgba="0.8 0.55 0.3 1"/>', f'rgba="0.8 0.55 0.3 1"/>\n      {marker}')
    (folder / "robot.xml").write_text(xml)
    return folder / "robot.xml"


def test_a_user_model_travels_in_the_checkpoint_and_the_run_directory(tmp_path: Path, capsys) -> None:
    model = write_user_model(tmp_path / "robot")
    files = pack_model(str(model))
    assert sorted(files) == ["files/0-marker.stl", MODEL_XML]
    original, packed = load_model(model), mujoco.MjSpec.from_string(files[MODEL_XML].decode(), assets=files).compile()
    assert (original.nmesh, original.nmeshvert, original.nq, original.nu) == (1, 4, 2, 1)
    for name in ("body_mass", "body_inertia", "geom_size", "mesh_vert", "actuator_ctrlrange", "dof_damping"):
        np.testing.assert_array_equal(getattr(packed, name), getattr(original, name), err_msg=name)

    env = phalanx.env_cfg("cartpole")
    env.name, env.model = "my-robot", str(model)
    run = tmp_path / "run"
    phalanx.train(env, phalanx.train_cfg("cartpole"), run_dir=str(run), **TINY)
    assert (run / "model" / MODEL_XML).is_file() and (run / "model" / "files" / "0-marker.stl").is_file()
    assert json.loads((run / "config.json").read_text())["env"]["model"] == str(model)
    shutil.rmtree(tmp_path / "robot")
    checkpoint = run / "checkpoints" / "model_last.pt"
    assert main(["play", "my-robot", "--checkpoint", str(checkpoint), "--device", "cpu", "--num-envs", "2"]) == 0
    assert "episodes finished" in capsys.readouterr().out
    assert main(["export", "my-robot", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "exported")]) == 0
    assert (tmp_path / "exported" / "policy.json").is_file()
    # A resumed run carries the model on, though its file is gone.
    resumed = phalanx.train(
        env, phalanx.train_cfg("cartpole"), run_dir=str(run), resume="last", **TINY | {"max_iterations": 3}
    )
    assert resumed.iteration == 3
    carried = torch.load(checkpoint, weights_only=True)["model_files"]
    assert {name: content.numpy().tobytes() for name, content in carried.items()} == files


def test_a_checkpoint_with_bad_model_files_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    phalanx.train("cartpole", run_dir=str(run), **TINY)
    checkpoint = run / "checkpoints" / "model_last.pt"
    state = torch.load(checkpoint, weights_only=True)
    empty = torch.zeros(0, dtype=torch.uint8)
    for bad in ("model.xml", {"model.xml": 1}, {"model.xml": torch.zeros(2, 2, dtype=torch.uint8)}, {"f": empty}):
        torch.save(state | {"model_files": bad}, checkpoint)
        assert main(["play", "cartpole", "--checkpoint", str(checkpoint), "--device", "cpu", "--num-envs", "2"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "model_files" in err, err
