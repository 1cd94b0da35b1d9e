"""`phalanx train --viewer`: the page of `phalanx view` while training runs. Each env step copies
the first envs' joint and mocap states into a ring on the device (a small copy, no host read);
after an iteration, when the page has played the last one, the ring goes to the host without
waiting (pinned memory, an event), and a thread of the viewer's own replays that rollout in real
time, with the iteration's metrics as curves. The trainer never waits for the page."""

from __future__ import annotations

import threading
import time
from typing import Any

import torch

from phalanx.envs.task_env import TaskEnv
from phalanx.viewer.command import host_array
from phalanx.viewer.server import MAX_SHOWN, Viewer

STATE = ("qpos", "mocap_pos", "mocap_quat")
"""The simulator's per-env tensors the page poses the geoms from."""


class TrainingView:
    """The page for `env`'s first envs, `steps` env steps per iteration (see the module)."""

    def __init__(self, env: TaskEnv, title: str, host: str, port: int, steps: int, shown: int = 9):
        self.sim, self.k, self.step_dt = env.sim, min(env.num_envs, MAX_SHOWN), env.step_dt
        pinned = self.sim.qpos.device.type == "cuda"
        current = {name: getattr(self.sim, name)[: self.k] for name in STATE}
        self._ring = {name: value.new_zeros((steps, *value.shape)) for name, value in current.items()}
        self._host = {name: torch.empty(r.shape, dtype=r.dtype, pin_memory=pinned) for name, r in self._ring.items()}
        self._copied = torch.cuda.Event() if pinned else None
        self.viewer = Viewer(
            self.sim.mjm, title, host_array(current["qpos"]), host, port, shown, steps=False, x_label="iteration"
        )
        self.status = self.viewer.server.gui.add_markdown("starting")
        self.port = self.viewer.port
        self.skipped = 0
        """Iterations whose rollout the page did not show: it was still playing an earlier one."""
        self._metrics: dict[str, Any] = {}
        self._free, self._ready, self._stop = threading.Event(), threading.Event(), threading.Event()
        self._free.set()
        self._player = threading.Thread(target=self._play, name="phalanx-viewer", daemon=True)
        self._player.start()

    def step(self, t: int) -> None:
        """After env step `t` of the rollout: the shown envs' state into the ring (on the device)."""
        for name, ring in self._ring.items():
            ring[t].copy_(getattr(self.sim, name)[: self.k])

    def iteration(self, metrics: dict[str, Any]) -> None:
        """After an iteration (its metrics read): its rollout to the page, unless the page still plays the last."""
        if not self._free.is_set():
            self.skipped += 1
            return
        self._free.clear()
        for name, ring in self._ring.items():
            self._host[name].copy_(ring, non_blocking=True)
        if self._copied is not None:
            self._copied.record()
        self._metrics = dict(metrics)
        self._ready.set()

    def _play(self) -> None:
        while not self._stop.is_set():
            if not self._ready.wait(0.1):
                continue
            self._ready.clear()
            while self._copied is not None and not self._copied.query():  # this thread waits, not the trainer
                time.sleep(0.002)
            rollout = {name: host_array(value) for name, value in self._host.items()}  # copies: the ring is free
            metrics = self._metrics
            self._free.set()
            self._show_metrics(metrics)
            for t in range(len(rollout["qpos"])):
                while self.viewer.paused and not self._stop.is_set():
                    time.sleep(0.05)
                if self._stop.is_set():
                    return
                self.viewer.show(
                    (t + 1) * self.step_dt, rollout["qpos"][t], rollout["mocap_pos"][t], rollout["mocap_quat"][t]
                )
                time.sleep(self.step_dt)

    def _show_metrics(self, metrics: dict[str, Any]) -> None:
        iteration = metrics.get("iteration", 0)
        fps = metrics.get("fps_total", float("nan"))
        self.status.content = f"iteration **{iteration}**, {fps:,.0f} env steps/s, {metrics.get('time_s', 0):.0f} s"
        for name, value in metrics.items():
            if name in ("mean_reward", "mean_episode_length") or name.startswith("metrics/"):
                if isinstance(value, float | int) and value == value:  # NaN: no episode ended
                    self.viewer.record(name, iteration, float(value))
        self.viewer.draw_curves()

    def close(self) -> None:
        self._stop.set()
        self._player.join(timeout=5)
        self.viewer.stop()
