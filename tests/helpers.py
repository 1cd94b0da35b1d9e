"""Small helpers shared by tests."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import torch

import phalanx


def make_cpu(task, num_envs: int = 8, seed: int = 0, **kwargs):
    return phalanx.make(task, num_envs=num_envs, device="cpu", seed=seed, verbose=False, **kwargs)


def random_actions(env, generator: torch.Generator) -> torch.Tensor:
    return torch.rand(env.num_envs, env.action_dim, generator=generator) * 2 - 1


def signal_after_iterations(command: list[str], run_dir: Path, sig: int, iterations: int = 3) -> tuple[int, str, str]:
    """Starts a training `command` writing into `run_dir`, sends it `sig` once `iterations` rows
    are in metrics.jsonl, and returns its exit status, stdout and stderr."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = run_dir / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < iterations):
        time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err
