"""`phalanx train --viewer` on the CPU: the trainer hands each rollout to the page without waiting
for it, the page replays it, and bad viewer flags are one line before anything is built."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import phalanx
from phalanx.cli import main

CPU = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_page_replays_each_rollout_it_is_free_for(tmp_path: Path) -> None:
    """Three iterations of cartpole with the viewer: the trainer's metrics are the same as without
    it (same seed), the page shows the first shown envs' last states of a rollout (the sim time
    of its last step), and the rollouts handed over while it played are counted as skipped."""
    kw = {"device": "cpu", "num_envs": 8, "num_steps_per_env": 4, "max_iterations": 3}
    plain = phalanx.train("cartpole", run_dir=str(tmp_path / "plain"), **kw)
    watched = phalanx.train("cartpole", run_dir=str(tmp_path / "watched"), viewer=True, viewer_port=_free_port(), **kw)
    rows = [
        [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        for name in ("plain", "watched")
    ]
    for a, b in zip(*rows, strict=True):
        learned = [key for key in a if key.startswith(("loss/", "mean_", "metrics/"))]
        assert learned and all(a[key] == b[key] for key in learned), (a, b)
    view = watched.watch
    assert view is not None and view.k == 8
    ring = view._ring["qpos"]
    np.testing.assert_array_equal(ring[-1].numpy(), watched.env.sim.qpos[:8].numpy())  # the last step's state
    del plain


def test_the_player_shows_a_handed_over_rollout(tmp_path: Path) -> None:
    """A rollout handed to a TrainingView is replayed: the page's time reaches its last step."""
    from phalanx.training.registry import make
    from phalanx.viewer.training_view import TrainingView

    env = make("cartpole", num_envs=4, device="cpu")
    view = TrainingView(env, "test", "127.0.0.1", _free_port(), steps=3)
    try:
        for t in range(3):
            env.step(torch.zeros(4, env.action_dim))
            view.step(t)
        view.iteration({"iteration": 1, "fps_total": 100.0, "time_s": 1.0, "mean_reward": 0.5})
        view.iteration({"iteration": 2})  # while the first plays: skipped
        deadline = time.monotonic() + 10
        while view.viewer.time_text.value != f"{3 * env.step_dt:.3f} s":
            assert time.monotonic() < deadline, view.viewer.time_text.value
            time.sleep(0.05)
        assert view.skipped == 1
        assert "iteration **1**" in view.status.content
    finally:
        view.close()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--viewer", "--trainer", "sb3"], "--viewer: the viewer watches phalanx's trainer, not --trainer sb3"),
        (["--viewer", "--viewer-port", "70000"], "--viewer-port: must be a port in [0, 65535], got 70000"),
        (["--viewer", "--viewer-port", "BUSY"], "--viewer-port: BUSY is not free on 127.0.0.1"),
    ],
)
def test_bad_viewer_flags_are_one_line(flags: list[str], message: str, tmp_path: Path, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        flags = [busy if flag == "BUSY" else flag for flag in flags]
        run = tmp_path / "run"
        assert main(["train", "cartpole", *CPU, "--max-iterations", "1", "--run-dir", str(run), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message.replace("BUSY", busy) in err, err
    assert not (run / "config.json").exists()
