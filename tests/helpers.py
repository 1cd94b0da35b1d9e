"""Small helpers shared by tests."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import weakref
from pathlib import Path

import mujoco
import numpy as np
import torch

import phalanx


def make_cpu(task, num_envs: int = 8, seed: int = 0, **kwargs):
    return phalanx.make(task, num_envs=num_envs, device="cpu", seed=seed, verbose=False, **kwargs)


def signal_in_a_weakref_callback(sig: int) -> None:
    """`sig` raised where Python drops the raise ("Exception ignored in ..."), as when the signal
    lands in a weakref callback of importlib's module locks."""

    class Owner:
        pass

    owner = Owner()
    ref = weakref.ref(owner, lambda _: signal.raise_signal(sig))
    del owner  # the callback runs now, and what it raises is printed and dropped
    assert ref() is None


def unused_port() -> int:
    """A port no one listens on now (the OS's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def random_actions(env, generator: torch.Generator) -> torch.Tensor:
    return torch.rand(env.num_envs, env.action_dim, generator=generator) * 2 - 1


def signal_after_iterations(
    command: list[str], run_dir: Path, sig: int, iterations: int = 3, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Starts a training `command` (in `env`, else this process's) writing into `run_dir`, sends it
    `sig` once `iterations` rows are in metrics.jsonl, and returns its exit status, stdout and stderr."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    metrics = run_dir / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < iterations):
        time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def site_ik(
    model: mujoco.MjModel, qpos: np.ndarray, joints: np.ndarray, dofs: np.ndarray, target: np.ndarray, axes: np.ndarray
) -> np.ndarray:
    """The positions of the joints (qpos addresses `joints`, dof addresses `dofs`) that put the
    site "ee" at `target` (world) with its axes the columns of `axes`, by damped least squares
    from `qpos` (MuJoCo C): a scripted arm's joint targets."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    site = model.site("ee").id
    for _ in range(100):
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, data, jacp, jacr, site)
        rotation = data.site_xmat[site].reshape(3, 3)
        turn = 0.5 * np.cross(rotation, axes, axis=0).sum(axis=1)
        error = np.concatenate((target - data.site_xpos[site], turn))
        jacobian = np.vstack((jacp, jacr))[:, dofs]
        data.qpos[joints] += jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + 1e-4 * np.eye(6), error)
    return data.qpos[joints].copy()


def constant_critic(logits1: list[float], logits2: list[float]):
    """Distributional critics over [-1, 0, 1] whose logits are these, whatever the input (their
    last layers: zero weights, the logits as bias); obs 2 wide, actions 1."""
    from phalanx.rl.critics import TwinCritic

    critic = TwinCritic(2, 1, (4,), -1.0, 1.0, 3)
    with torch.no_grad():
        for net, logits in ((critic.q1, logits1), (critic.q2, logits2)):
            net[-1].weight.zero_()
            net[-1].bias.copy_(torch.tensor(logits))
    return critic
