"""Per-iteration metrics: metrics.jsonl, a dashboard (TensorBoard events or a Weights & Biases
run) and an RL-Games style console line; play videos to the same dashboard."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from phalanx.core.errors import ConfigError
from phalanx.core.files import raise_if_out_of_space

LOGGERS = ("tensorboard", "wandb", "none")


def check_logger(name: str) -> None:
    """Refuses an unknown logger, or one whose library is not installed, before anything is built
    or written (without importing the library)."""
    if name not in LOGGERS:
        raise ConfigError(f"got {name!r}; allowed: {', '.join(LOGGERS)}", "logger")
    if name == "wandb" and importlib.util.find_spec("wandb") is None:
        raise ConfigError("got 'wandb', which needs the wandb package: pip install -e '.[wandb]'", "logger")


class RunLogger:
    """Writes one JSON object per iteration to `run_dir/metrics.jsonl` and the same scalars to the
    `logger` dashboard: TensorBoard events in run_dir, a Weights & Biases run (files in
    run_dir/wandb; offline, synced later with `wandb sync`, unless WANDB_MODE or a wandb login
    says online), or none. `config` (the run's settings) is logged once as its hyperparameters.
    Prints one console line per iteration. Without a run_dir only the console."""

    def __init__(
        self,
        run_dir: Path | None,
        console: Console,
        purge_step: int | None = None,
        logger: str = "tensorboard",
        config: dict[str, Any] | None = None,
    ):
        """`purge_step`: TensorBoard hides events an earlier attempt logged at this frame count or later."""
        check_logger(logger)
        self.console = console
        self._jsonl = None
        self._tb = None
        self._wandb = None
        if run_dir is None:
            return
        self._jsonl = open(run_dir / "metrics.jsonl", "a")  # noqa: SIM115 (closed in close())
        if logger == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(run_dir), purge_step=purge_step)
            if config is not None:
                self._tb.add_text("config", "```json\n" + json.dumps(config, indent=2) + "\n```", purge_step or 0)
        elif logger == "wandb":
            self._wandb = _wandb_run(run_dir, config)

    def log(self, metrics: dict[str, Any]) -> None:
        if self._jsonl is not None:
            try:
                self._jsonl.write(json.dumps(_json_safe(metrics), allow_nan=False) + "\n")
                self._jsonl.flush()
            except OSError as error:
                raise_if_out_of_space(error, Path(self._jsonl.name))
                raise
        scalars = {k: v for k, v in metrics.items() if isinstance(v, int | float) and k not in ("iteration", "frames")}
        if self._tb is not None:
            for key, value in scalars.items():
                self._tb.add_scalar(key, value, metrics["frames"])
        if self._wandb is not None:
            self._wandb.log(scalars | {"frames": metrics["frames"]})

    def line(self, m: dict[str, Any], max_iterations: int, max_time_s: float | None = None) -> str:
        """One iteration's progress: training time and the time left at this pace (or to
        `max_time_s`, where that comes first), fps (total, then
        the env step alone and with policy inference), frames, the episodes' mean reward and length
        once an episode has ended, and the task's metrics and curriculum levels."""
        done = m["iteration"] + 1
        episodes = (
            f"reward {m['mean_reward']:.2f}, episode length {m['mean_episode_length']:.1f}"
            if "mean_reward" in m
            else "no episode has ended yet"
        )
        task = [f"{k.split('/', 1)[1]} {v:.3g}" for k, v in m.items() if k.startswith(("metrics/", "env/"))]
        return " | ".join(
            [
                f"iteration {done}/{max_iterations}",
                f"{duration(m['time_s'])}, ETA {duration(time_left_s(m, max_iterations, max_time_s))}",
                f"fps {m['fps_total']:,.0f} (step {m['fps_step']:,.0f}, with policy {m['fps_step_inference']:,.0f})",
                f"{m['frames']:,} frames",
                episodes,
                *([", ".join(task)] if task else []),
            ]
        )

    def close(self) -> None:
        if self._jsonl is not None:
            self._jsonl.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def _json_safe(metrics: dict[str, Any]) -> dict[str, Any]:
    """`metrics` with null for each value that is not a finite number: JSON has no NaN or infinity
    (Python would write `NaN` and `Infinity`, which other readers refuse). A loss term can be
    infinite where it is only logged: PPO's surrogate while a student distils, its ratio taken
    at the teacher's actions."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def time_left_s(m: dict[str, Any], max_iterations: int, max_time_s: float | None = None) -> float:
    """Seconds of training left after the iteration of `m`: to `max_iterations` at the pace of
    the iterations so far, or to `max_time_s` where that comes first."""
    done = m["iteration"] + 1
    left = m["time_s"] / done * (max_iterations - done)
    return left if max_time_s is None else max(0.0, min(left, max_time_s - m["time_s"]))


def duration(seconds: float) -> str:
    """7.2 s, 3 min 05 s, 2 h 07 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min {int(seconds % 60):02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def page_status(m: dict[str, Any], max_iterations: int, max_time_s: float | None = None) -> str:
    """An iteration's line on `--viewer`'s page (markdown): iteration, fps, training time, ETA."""
    done, fps = m.get("iteration", 0) + 1, m.get("fps_total", float("nan"))
    eta = duration(time_left_s(m, max_iterations, max_time_s)) if "time_s" in m else "-"
    return f"iteration **{done}**/{max_iterations}, {fps:,.0f} env steps/s, {duration(m.get('time_s', 0.0))}, ETA {eta}"


def log_video(
    run_dir: Path,
    logger: str,
    video: Path,
    frames: list[np.ndarray],
    fps: float,
    step: int,
    config: dict[str, Any] | None = None,
) -> str | None:
    """Logs a video of `frames` (RGB uint8, (H, W, 3) each), already written as the mp4 `video`,
    to the `logger` dashboard of `run_dir` as "play/video" at `step` (frames trained): TensorBoard
    shows it as an animated GIF at half the resolution (its images tab; TensorBoard's own
    `add_video` needs moviepy), Weights & Biases gets the mp4 in a run of its own beside the
    training's, named RUN-play, with `config`. Returns where it went, or None for `logger` none."""
    check_logger(logger)
    if logger == "tensorboard":
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard import SummaryWriter

        height, width = frames[0][::2, ::2].shape[:2]
        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=_gif(frames, fps))
        with SummaryWriter(log_dir=str(run_dir)) as writer:
            writer.file_writer.add_summary(Summary(value=[Summary.Value(tag="play/video", image=image)]), step)
        return f"TensorBoard events in {run_dir}"
    if logger == "wandb":
        import wandb

        run = _wandb_run(run_dir, config, name=f"{run_dir.name}-play")
        run.log({"play/video": wandb.Video(str(video), format="mp4"), "frames": step})
        run.finish()
        return f"Weights & Biases run {run_dir.name}-play (files in {run_dir / 'wandb'})"
    return None


def _gif(frames: list[np.ndarray], fps: float) -> bytes:
    """An animated GIF of `frames` at half their resolution, looping, in real time: GIF delays
    are whole hundredths of a second and browsers play those under 2 as 10, so faster videos
    keep every k-th frame (k: the least that makes the delay at least 20 ms)."""
    from PIL import Image

    every = max(1, math.ceil(0.02 * fps))
    delay_ms = 10 * round(100 * every / fps)
    images = [Image.fromarray(np.ascontiguousarray(frame[::2, ::2])) for frame in frames[::every]]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=delay_ms, loop=0)
    return buffer.getvalue()


def _wandb_run(run_dir: Path, config: dict[str, Any] | None, name: str | None = None) -> Any:
    """A wandb run in `run_dir`, named `name` (default: after the directory); offline unless
    WANDB_MODE or an API key (the WANDB_API_KEY variable, or `wandb login`'s entry in ~/.netrc)
    says otherwise."""
    import wandb  # its callers ran check_logger, which refuses a missing wandb in one line

    logged_in = bool(os.environ.get("WANDB_API_KEY")) or "api.wandb.ai" in _read(Path.home() / ".netrc")
    mode = os.environ.get("WANDB_MODE") or ("online" if logged_in else "offline")
    project = os.environ.get("WANDB_PROJECT") or f"phalanx-{(config or {}).get('task', 'run')}"
    return wandb.init(project=project, name=name or run_dir.name, dir=str(run_dir), config=config, mode=mode)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
