"""Per-iteration metrics: metrics.jsonl, TensorBoard events and an RL-Games style console line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console


class RunLogger:
    """Writes one JSON object per iteration to `run_dir/metrics.jsonl` and the same scalars to
    TensorBoard; prints one console line per iteration. Without a run_dir only the console."""

    def __init__(self, run_dir: Path | None, console: Console, purge_step: int | None = None):
        """`purge_step`: TensorBoard hides events an earlier attempt logged at this frame count or later."""
        self.console = console
        self._jsonl = None
        self._tb = None
        if run_dir is not None:
            self._jsonl = open(run_dir / "metrics.jsonl", "a")  # noqa: SIM115 (closed in close())
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(run_dir), purge_step=purge_step)

    def log(self, metrics: dict[str, Any]) -> None:
        if self._jsonl is not None:
            self._jsonl.write(json.dumps(metrics) + "\n")
            self._jsonl.flush()
        if self._tb is not None:
            step = metrics["frames"]
            for key, value in metrics.items():
                if isinstance(value, int | float) and key not in ("iteration", "frames"):
                    self._tb.add_scalar(key, value, step)

    def line(self, m: dict[str, Any], max_iterations: int) -> str:
        """fps step / fps step and policy inference / fps total / epoch / frames, as RL-Games prints them."""
        return (
            f"fps step: {m['fps_step']:,.0f} fps step and policy inference: {m['fps_step_inference']:,.0f} "
            f"fps total: {m['fps_total']:,.0f} epoch: {m['iteration'] + 1}/{max_iterations} frames: {m['frames']:,} "
            f"| reward {m['mean_reward']:.2f} episode length {m['mean_episode_length']:.1f}"
        )

    def close(self) -> None:
        if self._jsonl is not None:
            self._jsonl.close()
        if self._tb is not None:
            self._tb.close()
