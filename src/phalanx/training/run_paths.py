"""Where runs go and how a command names a run's checkpoint: runs/TASK/DATE_TIME under the
working directory, a run's last checkpoint, and `--checkpoint`/`--resume` given as a file, a run
directory or 'last'. (Light: `phalanx list` imports it through the training config.)"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from phalanx.core.errors import ConfigError

RUNS = Path("runs")
"""Where runs without a `--run-dir` go (runs/TASK/DATE_TIME), relative to the working directory."""
LAST = Path("checkpoints") / "model_last.pt"


def checkpoint_file(given: str, task: str, flag: str = "checkpoint") -> str:
    """`--checkpoint` (or `flag`) as given: a checkpoint file; a run directory (its
    checkpoints/model_last.pt); or 'last', the model_last.pt under runs/TASK/ written last."""
    if not given:
        raise ConfigError("required: a model_*.pt written by phalanx train, its run directory, or 'last'", flag)
    if given == "last":
        found = sorted((RUNS / task).glob(f"*/{LAST}"), key=lambda path: path.stat().st_mtime)
        if not found:
            raise ConfigError(f"last: no run under {RUNS / task}/ holds {LAST}", flag)
        return str(found[-1])
    if Path(given).is_dir():
        if not (Path(given) / LAST).is_file():
            from phalanx.training.library_checkpoints import library_of, not_phalanxs

            trainer = library_of(Path(given))
            reason = not_phalanxs(Path(given), trainer) if trainer else f"the directory {given} holds no {LAST}"
            raise ConfigError(reason, flag)
        return str(Path(given) / LAST)
    return given


def new_run_dir(task: str) -> Path:
    """runs/TASK/DATE_TIME, with a suffix if a run started in the same second."""
    base = RUNS / task / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}_{n}")
    return path
