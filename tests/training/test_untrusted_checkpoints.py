"""A checkpoint is data: a file whose loading would run code is refused before any of it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from phalanx.cli import main


class _Payload:
    """Unpickling this calls open(marker, "w"): the marker file shows that code from the file ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture
def crafted(tmp_path: Path) -> tuple[Path, Path]:
    marker, path = tmp_path / "payload-ran", tmp_path / "model_last.pt"
    torch.save({"task": "cartpole", "config": {}, "policy": {"actor.0.weight": _Payload(marker)}}, path)
    return path, marker


@pytest.mark.parametrize(
    "command",
    [
        ["play", "cartpole", "--checkpoint", "{path}"],
        ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--resume", "{path}", "--run-dir", "{run}"],
        ["train", "anymal-nav", "--device", "cpu", "--num-envs", "4", "--env.actions.low-level.checkpoint", "{path}",
         "--run-dir", "{run}"],
    ],
    ids=["play", "resume", "low-level"],
)  # fmt: skip
def test_a_crafted_checkpoint_is_refused_and_its_code_never_runs(crafted, tmp_path: Path, capsys, command) -> None:
    path, marker = crafted
    args = [arg.format(path=path, run=tmp_path / "run") for arg in command]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"checkpoint: {path} holds Python objects" in err and "refused" in err
    assert not marker.exists()
    assert not (tmp_path / "run").exists(), "a refused run leaves no directory behind"
    torch.load(path, weights_only=False)  # what an unguarded loader does: the payload runs
    assert marker.exists()


def _damaged(kind: str, path: Path, good: bytes) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "junk":
        path.write_bytes(b"not a checkpoint at all")
    elif kind == "torn":
        path.write_bytes(good[: len(good) // 2])
    else:  # compressed: the same entries deflated, as a zip bomb would be
        import io
        import zipfile

        with zipfile.ZipFile(io.BytesIO(good)) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
            for entry in source.infolist():
                out.writestr(entry.filename, source.read(entry))


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("empty", "is empty"),
        ("junk", "is not a checkpoint torch.save wrote, or it is torn (File is not a zip file)"),
        ("torn", "is not a checkpoint torch.save wrote, or it is torn"),
        ("compressed", "holds compressed entries"),
    ],
)
def test_a_damaged_checkpoint_says_why_in_one_line(kind: str, reason: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "model.pt"
    buffer = tmp_path / "good.pt"
    torch.save({"task": "cartpole", "format": 2, "x": torch.zeros(1000)}, buffer)
    _damaged(kind, path, buffer.read_bytes())
    assert main(["play", "cartpole", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"checkpoint: {path} {reason}" in err, err


def _env(state: dict, **values) -> dict:
    return state | {"config": state["config"] | {"env": state["config"]["env"] | values}}


HOSTILE = {
    "format": (lambda s: s | {"format": "2"}, "has format '2', not a phalanx checkpoint format"),
    "config": (lambda s: s | {"config": [1]}, "config is a list, not a dict"),
    "episode": (lambda s: _env(s, episode_length_s=1e300), "env.episode_length_s: must be at most 1e+06 seconds"),
    "iteration": (lambda s: s | {"iteration": "7"}, "iteration is '7', not an integer >= 0"),
    "negative": (lambda s: s | {"iteration": -5}, "iteration is -5, not an integer >= 0"),
    "optimizer": (
        lambda s: s | {"ppo": s["ppo"] | {"optimizer": {"state": {}, "param_groups": "x"}}},
        "its learner or env state does not fit this run (TypeError",
    ),
    "moments": (
        lambda s: s | {"ppo": s["ppo"] | {"optimizer": _moment(s["ppo"]["optimizer"], 1, torch.zeros(3, 3))}},
        "does not fit this run (ValueError: optimizer state exp_avg of parameter 1 is torch.float32 (3, 3)",
    ),
}


def _moment(optimizer: dict, index: int, value: torch.Tensor) -> dict:
    """`optimizer` (a state dict) with parameter `index`'s first moment replaced by `value`."""
    state = dict(optimizer["state"])
    state[index] = state[index] | {"exp_avg": value}
    return optimizer | {"state": state}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_values_in_a_checkpoint_are_one_line(case: str, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert main(["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8",
                 "--max-iterations", "1", "--run-dir", str(run)]) == 0  # fmt: skip
    change, reason = HOSTILE[case]
    path = tmp_path / "hostile.pt"
    torch.save(change(torch.load(run / "checkpoints" / "model_last.pt", weights_only=True)), path)
    capsys.readouterr()
    command = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    command += ["--max-iterations", "2", "--resume", str(path), "--run-dir", str(tmp_path / "again")]
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and (f"checkpoint: {path}" in err or f"--resume {path}" in err), err
    assert reason in err, err
    assert not (tmp_path / "again").exists(), "a refused resume leaves no run directory behind"


def test_an_off_policy_optimizer_state_of_another_shape_is_one_line(tmp_path: Path, capsys) -> None:
    """TD3's critic moments of another shape: refused in one line before the run directory is
    written, where torch's AdamW would fail at its first step."""
    command = ["train", "cartpole", "--algo", "td3", "--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4",
               "--algo.batch-size", "16", "--algo.buffer-size", "20", "--algo.learning-starts", "2"]  # fmt: skip
    assert main([*command, "--max-iterations", "1", "--run-dir", str(tmp_path / "run")]) == 0
    state = torch.load(tmp_path / "run" / "checkpoints" / "model_last.pt", weights_only=True)
    learner = next(key for key, value in state.items() if isinstance(value, dict) and "critic_optimizer" in value)
    state[learner]["critic_optimizer"] = _moment(state[learner]["critic_optimizer"], 0, torch.zeros(2))
    path = tmp_path / "hostile.pt"
    torch.save(state, path)
    capsys.readouterr()
    assert main([*command, "--max-iterations", "2", "--resume", str(path), "--run-dir", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "optimizer state exp_avg of parameter 0 is torch.float32 (2,)" in err, err
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("algo", ["ppo", "td3"])
def test_a_stored_network_config_with_a_foreign_field_is_one_line(algo: str, tmp_path: Path, capsys) -> None:
    """play and export rebuild the checkpoint's network from its stored settings (PPO's
    config.policy, an off-policy run's config.algo): a field that is not the config's is one line
    naming it, not a TypeError."""
    run, part = tmp_path / "run", "policy" if algo == "ppo" else "algo"
    command = ["train", "cartpole", "--algo", algo, "--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4"]
    if algo == "td3":
        command += ["--algo.batch-size", "16", "--algo.buffer-size", "20", "--algo.learning-starts", "2"]
    assert main([*command, "--max-iterations", "1", "--run-dir", str(run)]) == 0
    state = torch.load(run / "checkpoints" / "model_last.pt", weights_only=True)
    state["config"][part] = state["config"][part] | {"bogus": 1}
    path = tmp_path / "foreign.pt"
    torch.save(state, path)
    capsys.readouterr()
    for args in (
        ["play", "cartpole", "--device", "cpu", "--steps", "2"],
        ["export", "cartpole", "--out", str(tmp_path)],
    ):
        assert main([*args, "--checkpoint", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"config.{part}: unknown fields ['bogus']" in err, err
