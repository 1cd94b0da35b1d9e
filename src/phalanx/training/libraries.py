"""`phalanx train TASK --trainer rsl_rl|rl_games|skrl|sb3`: another RL library learns a phalanx
task through its adapter here, with the task's PPO settings and network sizes, into the same run
directory as phalanx's own trainer: config.json, metrics.jsonl (one row per iteration, measured
by `MeteredEnv`: fps_step, fps_step_inference, fps_total, episode returns and lengths, reward
terms, metrics), the dashboard (`--logger`) and checkpoints/ (in the library's own format, which
its own tools load; `phalanx play` and `phalanx export` read phalanx's).

Each adapter module has `learn(train_cfg, env, checkpoints_dir)`, which runs the library for
`max_iterations` rollouts of `num_steps_per_env` steps, each followed by its update."""

from __future__ import annotations

import contextlib
import importlib
import tempfile
from pathlib import Path

import torch
from rich.console import Console

from phalanx.core.cfg_data import to_data
from phalanx.core.errors import ConfigError
from phalanx.dist import DistContext, Progress, StallWatchdog
from phalanx.sim.model_files import pack_model
from phalanx.training.cfg import TrainCfg
from phalanx.training.logger import RunLogger
from phalanx.training.run_dir import RunDir

ADAPTERS = {
    "rsl_rl": "phalanx.wrappers.rsl_rl",
    "rl_games": "phalanx.wrappers.rl_games",
    "skrl": "phalanx.wrappers.skrl",
    "sb3": "phalanx.wrappers.sb3",
}


def adapter(trainer: str):
    """The adapter module of `trainer`; a missing library is a ConfigError naming what to install."""
    try:
        return importlib.import_module(ADAPTERS[trainer])
    except ImportError as error:
        if "pip install" not in str(error):  # not the adapter's own message: a broken install
            raise
        raise ConfigError(str(error), "trainer") from None


def train_with_library(cfg: TrainCfg, console: Console, dist: DistContext | None = None) -> int:
    """Trains with `cfg.trainer` as `cfg` says (checked by `check_train_cfg`; device, num_envs and
    run_dir resolved); returns the exit status. Under torchrun (`dist`, from `library_rank`) every
    rank trains its own envs (seed + rank) and the library averages the gradients; rank 0 writes
    the run directory, with fps and episode figures over all ranks, the others write nothing
    (whatever the library writes on them goes to a temporary directory). The stall watchdog
    watches every rank's env steps, as in phalanx's own runs: a rank stuck for `stall_timeout_s`
    (`startup_timeout_s` until its first iteration is done) is named and the job stops."""
    from phalanx.envs.term_tables import print_term_tables, sim_summary
    from phalanx.training.metered import MeteredEnv
    from phalanx.training.registry import make

    dist = dist or DistContext()
    learn = adapter(cfg.trainer).learn
    run_dir = Path(cfg.run_dir)
    progress = Progress()
    with contextlib.ExitStack() as stack:
        stack.enter_context(StallWatchdog(dist, progress, cfg.stall_timeout_s, cfg.startup_timeout_s))
        if dist.is_main:
            run = stack.enter_context(RunDir(run_dir, console))
            run.check_owner(None, False)
            run.checkpoints.mkdir(exist_ok=True)
            checkpoints = run.checkpoints
        else:
            checkpoints = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="phalanx-rank-"))) / "checkpoints"
            checkpoints.mkdir()
        progress.enter("building the env", slow=True)
        env = make(cfg.env, num_envs=cfg.num_envs, device=torch.device(cfg.device), seed=cfg.seed + dist.rank)
        print_term_tables(env)
        ranks = f" x {dist.world_size} ranks" if dist.active else ""
        summary = f"--trainer {cfg.trainer} {sim_summary(env)}{ranks} | run dir {run_dir}"
        console.print(f"[bold]phalanx train[/bold] {summary}")
        config = to_data(cfg)
        if dist.is_main:
            run.begin(0, config, dist.world_size, pack_model(cfg.env.model))
        # The networks' initial weights (the libraries broadcast rank 0's) and each rank's own
        # action noise, which rsl_rl and skrl draw from torch's global generators.
        torch.manual_seed(cfg.seed + dist.rank)
        logger = RunLogger(run_dir if dist.is_main else None, console, logger=cfg.logger, config=config)
        progress.enter("starting the library", slow=True)
        metered = MeteredEnv(env, cfg.num_steps_per_env, logger, cfg.max_iterations, dist, progress)
        try:
            learn(cfg, metered, checkpoints)
            metered.finish()
        finally:
            logger.close()
            if torch.distributed.is_initialized():  # joined by the library
                torch.distributed.destroy_process_group()
    console.print(f"done: {metered.iteration} iterations, {cfg.trainer} checkpoints in {checkpoints}")
    return 0
