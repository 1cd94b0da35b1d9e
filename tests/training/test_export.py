"""phalanx export: the exported policy (ONNX through onnxruntime, TorchScript) acts as the trained
policy does in `phalanx play`, and its sidecar describes the observation and the actuators."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from helpers import make_cpu
from phalanx.cli import main
from phalanx.envs.stored_cfg import env_cfg_from_data
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.models import mlp
from phalanx.training.checkpoint import load_checkpoint
from phalanx.training.play import load_actor

QUICK = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4", "--max-iterations", "2"]


def _trained(task: str, root: Path, *flags: str) -> Path:
    assert main(["train", task, *QUICK, "--run-dir", str(root / task), *flags]) == 0
    return root / task / "checkpoints" / "model_last.pt"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """cartpole with the observation normalizer (the exported model applies it), cartpole-rgb without."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "cartpole": _trained("cartpole", root, "--empirical-normalization"),
        "cartpole-rgb": _trained("cartpole-rgb", root),
    }


def _random_obs(env, generator: torch.Generator, n: int = 7) -> dict[str, torch.Tensor]:
    obs = {"policy": torch.randn(n, *env.observation_spec["policy"], generator=generator) * 3}
    if "image" in env.observation_spec:
        obs["image"] = torch.randint(0, 256, (n, *env.observation_spec["image"]), generator=generator).byte()
    return obs


def _played_and_exported(task: str, checkpoint: Path, fmt: str, out: Path):
    """The play policy's and the exported model's actions on the same random observations."""
    assert main(["export", task, "--checkpoint", str(checkpoint), "--format", fmt, "--out", str(out)]) == 0
    state = load_checkpoint(checkpoint, task)
    env = make_cpu(env_cfg_from_data(state["config"]["env"], "test"), num_envs=2)
    obs = _random_obs(env, torch.Generator().manual_seed(0))
    played = load_actor(state, env)(obs).numpy()
    inputs = [obs["policy"]] + ([obs["image"]] if "image" in obs else [])
    if fmt == "onnx":
        session = onnxruntime.InferenceSession(str(out / "policy.onnx"))
        exported = session.run(None, dict(zip(["obs", "image"], [x.numpy() for x in inputs], strict=False)))[0]
    else:
        exported = torch.jit.load(str(out / "policy.pt"))(*inputs).numpy()
    return env, played, exported


@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
@pytest.mark.parametrize("task", ["cartpole", "cartpole-rgb"])
def test_the_exported_policy_acts_as_the_played_one(checkpoints, task: str, fmt: str, tmp_path: Path) -> None:
    _, played, exported = _played_and_exported(task, checkpoints[task], fmt, tmp_path)
    assert played.shape == exported.shape == (7, 1)
    assert np.abs(played - exported).max() <= 1e-5
    assert np.abs(played).max() > 1e-3, "the comparison must see actions, not zeros"


def test_the_normalizer_runs_inside_the_exported_model(checkpoints, tmp_path: Path) -> None:
    """Against the checkpoint's own tensors: actor((obs - mean) / sqrt(var + 1e-8))."""
    assert main(["export", "cartpole", "--checkpoint", str(checkpoints["cartpole"]), "--out", str(tmp_path)]) == 0
    state = load_checkpoint(checkpoints["cartpole"], "cartpole")
    policy = PolicyCfg(**state["config"]["policy"])
    actor = mlp(4, policy.actor_hidden_dims, 1, policy.activation)
    actor.load_state_dict({k.removeprefix("actor."): v for k, v in state["policy"].items() if k.startswith("actor.")})
    norm = state["obs_norm"]
    assert not torch.allclose(norm["mean"], torch.zeros(4)), "the statistics must matter"
    obs = torch.randn(7, 4, generator=torch.Generator().manual_seed(1)) * 3
    expected = actor((obs - norm["mean"]) / torch.sqrt(norm["var"] + 1e-8)).detach().numpy()
    exported = onnxruntime.InferenceSession(str(tmp_path / "policy.onnx")).run(None, {"obs": obs.numpy()})[0]
    assert np.abs(expected - exported).max() <= 1e-5


def test_the_sidecar_says_how_to_feed_the_policy_and_what_it_drives(checkpoints, tmp_path: Path) -> None:
    env, *_ = _played_and_exported("cartpole", checkpoints["cartpole"], "onnx", tmp_path)
    sidecar = json.loads((tmp_path / "policy.json").read_text())
    assert sidecar["models"] == {"onnx": "policy.onnx"} and sidecar["format"] == "phalanx-policy/2"
    assert sidecar["task"] == "cartpole" and sidecar["iteration"] == 2
    assert sidecar["inputs"] == [{"name": "obs", "shape": ["batch", 4], "dtype": "float32"}]
    assert sidecar["output"] == {"name": "actions", "shape": ["batch", 1], "dtype": "float32"}
    terms = sidecar["observations"]["obs"]
    assert [t["name"] for t in terms] == list(env.cfg.observations["policy"])
    assert terms[0]["slice"][0] == 0 and terms[-1]["slice"][1] == 4
    assert all(a["slice"][1] == b["slice"][0] for a, b in zip(terms, terms[1:], strict=False)), "contiguous, in order"
    assert {"function", "params", "scale", "clip", "history"} <= set(terms[0])
    actions = sidecar["actions"]
    assert actions["actuators"] == env.sim.actuator_names and actions["scale"] == env.cfg.actions.scale
    assert actions["joints"] == ["slider"] and len(actions["offset"]) == len(actions["default_joint_pos"]) == 1
    assert actions["ctrl_range"] == [[-400.0, 400.0]] and "ctrl_range[i]" in actions["formula"]
    assert sidecar["control_dt"] == pytest.approx(env.step_dt) and sidecar["normalization"] == "inside the model"


def test_the_image_policy_takes_the_camera_image_as_it_comes(checkpoints, tmp_path: Path) -> None:
    _played_and_exported("cartpole-rgb", checkpoints["cartpole-rgb"], "torchscript", tmp_path)
    sidecar = json.loads((tmp_path / "policy.json").read_text())
    assert sidecar["inputs"][1] == {"name": "image", "shape": ["batch", 64, 64, 6], "dtype": "uint8"}
    (rgb,) = sidecar["observations"]["image"]
    assert rgb["channels"] == [0, 6] and rgb["history"] == 2 and rgb["function"] == "camera_image"
    assert sidecar["observations"]["obs"] == [], "its vector group is empty"


def test_bad_export_flags_say_what_is_allowed(checkpoints, tmp_path: Path, capsys, monkeypatch) -> None:
    checkpoint = ["--checkpoint", str(checkpoints["cartpole"]), "--out", str(tmp_path)]
    assert main(["export", "cartpole", *checkpoint, "--format", "tflite"]) == 2
    assert "--format: got 'tflite'; allowed: onnx, torchscript" in capsys.readouterr().err
    assert main(["export", "ant", *checkpoint]) == 2
    assert "was trained on task 'cartpole', not 'ant'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # as if the extra were not installed
    assert main(["export", "cartpole", *checkpoint]) == 2
    assert "pip install -e '.[export]'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing half-written"


def test_both_formats_share_one_sidecar_and_export_warns_nothing(checkpoints, tmp_path: Path) -> None:
    """ONNX, then TorchScript into the same directory: policy.json names both models (the second
    export does not take the first one's place), and neither export raises a warning."""
    checkpoint = str(checkpoints["cartpole"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fmt in ("onnx", "torchscript"):
            flags = ["--checkpoint", checkpoint, "--format", fmt, "--out", str(tmp_path)]
            assert main(["export", "cartpole", *flags]) == 0
    sidecar = json.loads((tmp_path / "policy.json").read_text())
    assert sidecar["models"] == {"onnx": "policy.onnx", "torchscript": "policy.pt"}


def test_export_takes_the_run_directory(checkpoints, tmp_path: Path) -> None:
    run = checkpoints["cartpole"].parent.parent
    flags = ["--checkpoint", str(run), "--format", "torchscript", "--out", str(tmp_path)]
    assert main(["export", "cartpole", *flags]) == 0
    assert json.loads((tmp_path / "policy.json").read_text())["checkpoint"] == str(checkpoints["cartpole"])


def test_the_sidecar_example_in_the_docs_has_the_fields_an_export_writes(checkpoints, tmp_path: Path) -> None:
    """docs/export.md's policy.json example: the same fields, at every level, as cartpole's export."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "export.md").read_text()
    example = json.loads(doc.split("```json\n", 1)[1].split("```", 1)[0])
    assert main(["export", "cartpole", "--checkpoint", str(checkpoints["cartpole"]), "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "policy.json").read_text())
    assert set(example) == set(written)
    assert set(example["actions"]) == set(written["actions"])
    assert set(example["observations"]["obs"][0]) == set(written["observations"]["obs"][0])
    assert example["format"] == written["format"]
