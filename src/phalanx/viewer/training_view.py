"""`phalanx train --viewer`: the page of `phalanx view` while training runs. When the page is free
at a rollout's first step, each env step of that rollout copies the first envs' joint and mocap
states, their command markers and the first env's images into a ring on the device (small
copies, no host read); after the iteration, the ring goes to the host without waiting (pinned
memory, an event), and a thread of the viewer's own replays that rollout in real time, with the
iteration's metrics as curves. Rollouts that begin while the page plays are not recorded. The
trainer never waits for the page."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from phalanx.envs.mdp.observations import colour_first
from phalanx.envs.task_env import TaskEnv
from phalanx.sim.video import policy_view
from phalanx.viewer.markers import device_markers, host_array
from phalanx.viewer.server import FRAME_S, MAX_SHOWN, Viewer

STATE = ("qpos", "mocap_pos", "mocap_quat")
"""The simulator's per-env tensors the page poses the geoms from."""


class StepRing:
    """Per-step copies of named device tensors over one rollout of `steps` env steps, each ring
    made at its first `put`, and their trip to pinned host memory without a wait."""

    def __init__(self, steps: int, device: torch.device):
        self.steps, self.pinned = steps, device.type == "cuda"
        self.rings: dict[str, torch.Tensor] = {}
        self.host: dict[str, torch.Tensor] = {}
        self._copied = torch.cuda.Event() if self.pinned else None

    def put(self, t: int, name: str, value: torch.Tensor) -> None:
        ring = self.rings.get(name)
        if ring is None:
            ring = self.rings[name] = value.new_zeros((self.steps, *value.shape))
            self.host[name] = torch.empty(ring.shape, dtype=ring.dtype, pin_memory=self.pinned)
        ring[t].copy_(value)

    def to_host(self) -> None:
        """Starts the copies to the host; `on_host` waits for them (on a GPU: from another thread)."""
        for name, ring in self.rings.items():
            self.host[name].copy_(ring, non_blocking=True)
        if self._copied is not None:
            self._copied.record()

    def on_host(self, stop: threading.Event) -> dict[str, torch.Tensor]:
        """The rollout on the host, once `to_host`'s copies are done (on a GPU this waits for them)."""
        while self._copied is not None and not self._copied.query() and not stop.is_set():
            time.sleep(0.002)
        return dict(self.host)


class TrainingView:
    """The page for `env`'s first envs, `steps` env steps per iteration (see the module); `status`
    writes the page's line (markdown) on an iteration from its metrics."""

    def __init__(
        self,
        env: TaskEnv,
        title: str,
        host: str,
        port: int,
        steps: int,
        status: Callable[[dict[str, Any]], str],
        shown: int = 9,
    ):
        self.status_line = status
        self.env, self.sim, self.k, self.step_dt = env, env.sim, min(env.num_envs, MAX_SHOWN), env.step_dt
        self.ring = StepRing(steps, self.sim.qpos.device)
        self.images = [group for group, shape in env.observation_spec.items() if len(shape) == 3]
        self.colour = bool(self.images) and colour_first(env.cfg.observations[self.images[0]])
        qpos = host_array(self.sim.qpos[: self.k])
        self.viewer = Viewer(self.sim.mjm, title, qpos, host, port, shown, steps=False, x_label="iteration")
        self.status = self.viewer.server.gui.add_markdown("starting")
        self.port = self.viewer.port
        self.skipped = 0
        """Iterations whose rollout the page did not show: it was still playing an earlier one."""
        self.recording = False
        """Whether the rollout under way is recorded (the page was free at its first step)."""
        self._kinds: dict[str, tuple[str, tuple[int, int, int]]] = {}  # marker name -> (shape, color)
        self._metrics: dict[str, Any] = {}
        self._free, self._ready, self._stop = threading.Event(), threading.Event(), threading.Event()
        self._free.set()
        self._player = threading.Thread(target=self._play, name="phalanx-viewer", daemon=True)
        self._player.start()

    def step(self, t: int) -> None:
        """After env step `t` of the rollout: what the page shows of it into the ring (on the device)."""
        if t == 0:
            self.recording = self._free.is_set()
        if not self.recording:
            return
        for name in STATE:
            self.ring.put(t, name, getattr(self.sim, name)[: self.k])
        for name, marker in device_markers(self.env, self.k).items():
            self._kinds[name] = (marker.shape, marker.color)
            for part in ("pos", "quat", "scale"):
                self.ring.put(t, f"marker:{name}:{part}", getattr(marker, part))
        for group in self.images[:1]:
            self.ring.put(t, "image", self.env.obs[group][0])

    def iteration(self, metrics: dict[str, Any]) -> None:
        """After an iteration (its metrics read): its rollout to the page, if it was recorded; the
        ring is not written again until the page has played it."""
        if not self.recording:
            self.skipped += 1
            return
        self.recording = False
        self._free.clear()
        self.ring.to_host()
        self._metrics = dict(metrics)
        self._ready.set()

    def _play(self) -> None:
        while not self._stop.is_set():
            if not self._ready.wait(0.1):
                continue
            self._ready.clear()
            rollout = self.ring.on_host(self._stop)
            images = rollout.pop("image", None)
            rollout = {name: host_array(value) for name, value in rollout.items()}
            self._show_metrics(self._metrics)
            last = len(rollout["qpos"]) - 1
            every = max(1, round(FRAME_S / self.step_dt))  # about 30 frames/s, in real time
            for t in range(last + 1):
                while self.viewer.paused and not self._stop.is_set():
                    time.sleep(0.05)
                if self._stop.is_set():
                    return
                if (t + 1) % every == 0 or t == last:
                    self._show(rollout, images, t)
                time.sleep(self.step_dt)
            self._free.set()

    def _show(self, rollout: dict[str, np.ndarray], images: torch.Tensor | None, t: int) -> None:
        """Step `t` of the rollout on the page."""
        qpos, mocap_pos, mocap_quat = (rollout[name][t] for name in STATE)
        self.viewer.show((t + 1) * self.step_dt, qpos, mocap_pos, mocap_quat)
        self.viewer.markers(self._markers(rollout, t))
        if images is not None:
            self.viewer.image(policy_view(images[t], self.colour))

    def _markers(self, rollout: dict[str, np.ndarray], t: int) -> dict[str, tuple]:
        """Step `t`'s markers as `Viewer.markers` takes them."""
        return {
            name: (shape, *(rollout[f"marker:{name}:{part}"][t] for part in ("pos", "quat", "scale")), color)
            for name, (shape, color) in self._kinds.items()
        }

    def _show_metrics(self, metrics: dict[str, Any]) -> None:
        done = metrics.get("iteration", 0) + 1
        self.status.content = self.status_line(metrics)
        for name, value in metrics.items():
            if name in ("mean_reward", "mean_episode_length") or name.startswith("metrics/"):
                if isinstance(value, float | int) and value == value:  # NaN: no episode ended
                    self.viewer.record(name, done, float(value))
        self.viewer.draw_curves()

    def close(self) -> None:
        self._stop.set()
        self._player.join(timeout=5)
        self.viewer.stop()
