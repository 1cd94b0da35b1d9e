"""`phalanx train --viewer` on the CPU: the trainer hands each rollout to the page without waiting
for it, the page replays it, and bad viewer flags are one line before anything is built."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import phalanx
from helpers import unused_port
from phalanx.cli import main
from phalanx.training.logger import page_status

ROOT = Path(__file__).resolve().parents[2]
STATUS = functools.partial(page_status, max_iterations=10)
CPU = ["--device", "cpu", "--num-envs", "8", "--num-steps-per-env", "4"]


def test_training_with_the_viewer_learns_as_without_it(tmp_path: Path) -> None:
    """Three iterations of cartpole with the viewer: the trainer's metrics are the same as without
    it (same seed)."""
    kw = {"device": "cpu", "num_envs": 8, "num_steps_per_env": 4, "max_iterations": 3}
    phalanx.train("cartpole", run_dir=str(tmp_path / "plain"), **kw)
    watched = phalanx.train("cartpole", run_dir=str(tmp_path / "watched"), viewer=True, viewer_port=unused_port(), **kw)
    rows = [
        [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        for name in ("plain", "watched")
    ]
    for a, b in zip(*rows, strict=True):
        learned = [key for key in a if key.startswith(("loss/", "mean_", "metrics/"))]
        assert learned and all(a[key] == b[key] for key in learned), (a, b)
    view = watched.watch
    assert view is not None and view.k == 8


def _played(view, steps: int) -> None:
    """Waits until the page has played the rollout it was handed, and checks it showed its last step."""
    assert view._free.wait(20)
    assert view.viewer.time_text.value == f"{steps * view.step_dt:.3f} s"


def test_the_player_shows_a_handed_over_rollout_and_records_none_while_it_plays() -> None:
    """A rollout handed to a TrainingView is replayed (the page's time reaches its last step); the
    rollout that begins while it plays (held by pause here) is neither recorded nor shown, and is
    counted as skipped."""
    from phalanx.training.registry import make
    from phalanx.viewer.training_view import TrainingView

    env = make("cartpole", num_envs=4, device="cpu")
    view = TrainingView(env, "test", "127.0.0.1", unused_port(), steps=3, status=STATUS)
    try:
        for t in range(3):
            env.step(torch.zeros(4, env.action_dim))
            view.step(t)
        first = env.sim.qpos.clone()
        view.viewer.pause_box.value = True  # the page holds the first rollout's first step
        view.iteration({"iteration": 1, "fps_total": 100.0, "time_s": 4.0, "mean_reward": 0.5})
        for t in range(3):  # while the first plays
            env.step(torch.ones(4, env.action_dim))
            view.step(t)
        view.iteration({"iteration": 2})
        view.viewer.pause_box.value = False
        _played(view, 3)
        assert view.skipped == 1
        assert view.status.content == "iteration **2**/10, 100 env steps/s, 4.0 s, ETA 16.0 s"
        np.testing.assert_array_equal(view.ring.rings["qpos"][-1].numpy(), first.numpy())
    finally:
        view.close()


@pytest.mark.parametrize("task", ["anymal-flat", "cartpole-rgb"])
def test_the_page_shows_the_rollouts_markers_and_images(task: str) -> None:
    """During training the page shows each recorded step's command markers (anymal-flat's
    velocity arrows, where its envs stood) and what env 0's policy saw (cartpole-rgb's image)."""
    from phalanx.sim.video import policy_view
    from phalanx.training.registry import make
    from phalanx.viewer.markers import command_markers
    from phalanx.viewer.training_view import TrainingView

    env = make(task, num_envs=2, device="cpu")
    view = TrainingView(env, "test", "127.0.0.1", unused_port(), steps=2, status=STATUS)
    try:
        for t in range(2):
            env.step(torch.rand(2, env.action_dim) * 2 - 1)
            view.step(t)
        markers = command_markers(env, 2)
        image = policy_view(env.obs["image"][0], True) if task == "cartpole-rgb" else None
        view.iteration({"iteration": 1})
        _played(view, 2)
        assert set(view.viewer._markers) == set(markers) and (markers or task == "cartpole-rgb")
        for name, (_, pos, quat, scale, _) in markers.items():
            handle = view.viewer._markers[name]
            np.testing.assert_allclose(handle.batched_positions, pos + view.viewer.poses.offsets[:2], atol=1e-5)
            np.testing.assert_allclose(handle.batched_wxyzs, quat, atol=1e-6)
            np.testing.assert_allclose(handle.batched_scales, scale, atol=1e-6)
        if image is not None:
            np.testing.assert_array_equal(view.viewer._image.image, image)
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


def test_a_page_without_a_browser_receives_the_replay() -> None:
    """tools/viewer_client.py, the open page of the viewer's cost measurement on a machine with no
    browser, connects as viser's web client does and receives what the server sends (the scene,
    then the poses of a replay)."""
    from phalanx.training.registry import make
    from phalanx.viewer.training_view import TrainingView

    env = make("cartpole", num_envs=2, device="cpu")
    view = TrainingView(env, "test", "127.0.0.1", unused_port(), steps=50, status=STATUS)
    client = [sys.executable, str(ROOT / "tools" / "viewer_client.py"), "--port", str(view.port), "--seconds", "120"]
    try:
        page = subprocess.Popen(client, stdout=subprocess.PIPE, text=True)
        assert page.stdout.readline() == "connected\n"  # the replay below is sent to it
        for t in range(50):
            env.step(torch.zeros(2, env.action_dim))
            view.step(t)
        view.iteration({"iteration": 1})
        assert view._free.wait(20)  # played
        page.terminate()  # SIGTERM: it prints what it received
        out, _ = page.communicate(timeout=30)
        received = json.loads(out.splitlines()[-1])
        assert received["seconds"] > 0 and received["messages"] > 10 and received["bytes"] > 10_000, received
    finally:
        view.close()


def test_the_replay_shows_about_30_frames_per_second_of_sim_time() -> None:
    """cartpole steps 1/60 s: of a 60-step rollout the page shows every other step, and its last."""
    from phalanx.training.registry import make
    from phalanx.viewer.server import FRAME_S
    from phalanx.viewer.training_view import TrainingView

    env = make("cartpole", num_envs=2, device="cpu")
    view = TrainingView(env, "test", "127.0.0.1", unused_port(), steps=60, status=STATUS)
    shown = []
    show = view.viewer.show
    view.viewer.show = lambda sim_time, *state: (shown.append(sim_time), show(sim_time, *state))
    try:
        for t in range(60):
            env.step(torch.zeros(2, env.action_dim))
            view.step(t)
        view.iteration({"iteration": 0})
        _played(view, 60)
        assert round(FRAME_S / view.step_dt) == 2
        assert shown == [(t + 1) * view.step_dt for t in range(1, 60, 2)], shown
    finally:
        view.close()
