"""The console's line per iteration: progress, time left, speed, episodes and the task's metrics;
metrics.jsonl's rows: standard JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rich.console import Console

from phalanx.training.logger import RunLogger

ROW = {"iteration": 3, "frames": 4096, "time_s": 20.0, "fps_total": 1000.4, "fps_step": 3000.0}
ROW |= {"fps_step_inference": 2000.0, "loss/value": 0.5}


def test_the_line_says_iteration_time_left_speed_and_the_tasks_metrics() -> None:
    line = RunLogger(None, Console(quiet=True)).line(
        ROW | {"mean_reward": 1.234, "mean_episode_length": 99.0, "metrics/success": 0.91234, "env/terrain_level": 2.5},
        max_iterations=40,
    )
    assert line == (
        "iteration 4/40 | 20.0 s, ETA 3 min 00 s | fps 1,000 (step 3,000, with policy 2,000) | 4,096 frames"
        " | reward 1.23, episode length 99.0 | success 0.912, terrain_level 2.5"
    )


def test_before_an_episode_ends_the_line_says_so_and_shows_no_zeros() -> None:
    line = RunLogger(None, Console(quiet=True)).line(ROW | {"time_s": 7230.0}, max_iterations=8)
    assert line == (
        "iteration 4/8 | 2 h 00 min, ETA 2 h 00 min | fps 1,000 (step 3,000, with policy 2,000) | 4,096 frames"
        " | no episode has ended yet"
    )


def test_a_value_that_is_not_finite_is_null_in_metrics_jsonl(tmp_path: Path) -> None:
    """JSON has no NaN or infinity: such a value (the surrogate while a student distils) is written
    as null, so that every JSON reader takes the row; the others as they are."""
    logger = RunLogger(tmp_path, Console(quiet=True), logger="none")
    logger.log(ROW | {"loss/surrogate": math.inf, "loss/kl": -math.inf, "metrics/success": math.nan})
    logger.close()
    line = (tmp_path / "metrics.jsonl").read_text()
    row = json.loads(line, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert row == ROW | {"loss/surrogate": None, "loss/kl": None, "metrics/success": None}
