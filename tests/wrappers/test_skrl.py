"""skrl's own PPO agent and trainer learn a phalanx task through `SkrlEnv` (`learn`, as `phalanx
train --trainer skrl` runs it): the returns rise on a fixed seed, the checkpoints load, and the
contract holds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import phalanx
from phalanx.core.errors import ConfigError
from phalanx.envs.task_env import TaskEnv
from phalanx.wrappers.skrl import SkrlEnv, learn, ppo_agent, ppo_cfg


def _return_per_env(env: SkrlEnv, agent, steps: int = 150) -> float:
    """Reward of the mean actions summed over `steps` steps from a reset, averaged over envs
    (episodes restart)."""
    (obs, _), total = env.reset(), 0.0
    for _ in range(steps):
        with torch.no_grad():
            _, outputs = agent.act(obs, env.state(), timestep=0, timesteps=0)
            obs, reward, _, _, _ = env.step(outputs["mean_actions"])
        total += float(reward.mean())
    return total


def test_skrls_ppo_learns_cartpole(tmp_path: Path) -> None:
    torch.manual_seed(0)
    train = phalanx.train_cfg("cartpole")
    train.max_iterations, train.save_interval = 20, 10
    task = phalanx.make("cartpole", num_envs=64, device="cpu", seed=0)
    env = SkrlEnv(task)
    agent = ppo_agent(train, env)  # untrained, then loaded with learn's last checkpoint
    before = _return_per_env(env, agent)
    learn(train, task, tmp_path / "checkpoints")
    steps = train.num_steps_per_env
    assert [path.name for path in tmp_path.iterdir()] == ["checkpoints"], "skrl writes nothing beside them"
    saved = sorted(path.name for path in (tmp_path / "checkpoints").iterdir())
    assert saved == [f"agent_{10 * steps}.pt", f"agent_{20 * steps}.pt"], saved
    agent.load(str(tmp_path / "checkpoints" / f"agent_{20 * steps}.pt"))
    after = _return_per_env(env, agent)
    assert after > before + 50, (before, after)  # 40 -> 139 of at most 150 when written (seeds 1-4: 61-58 -> 138-144)


def _env_with_critic(num_envs: int) -> tuple[TaskEnv, SkrlEnv]:
    """Cartpole with a privileged "critic" group of 2 (the pole's angle and speed)."""
    cfg = phalanx.train_cfg("cartpole").env
    policy = cfg.observations["policy"]
    cfg.observations["critic"] = {name: policy[name] for name in ("pole_pos", "pole_vel")}
    task = phalanx.make(cfg, num_envs=num_envs, device="cpu")
    return task, SkrlEnv(task)


def test_the_contract_skrl_reads() -> None:
    task, env = _env_with_critic(4)
    assert env.observation_space.shape == (4,) and env.state_space.shape == (2,) and env.action_space.shape == (1,)
    assert env.num_envs == 4 and env.device == torch.device("cpu")
    obs, infos = env.reset()
    assert obs.shape == (4, 4) and env.state().shape == (4, 2) and infos == {}
    obs, reward, terminated, truncated, infos = env.step(torch.zeros(4, 1))
    assert obs.shape == (4, 4) and obs.dtype == torch.float32 and env.state().shape == (4, 2)
    assert reward.shape == terminated.shape == truncated.shape == (4, 1)
    assert reward.dtype == torch.float32 and terminated.dtype == truncated.dtype == torch.bool
    assert "episode" in infos and "final_obs" in infos
    # Copies, not the env's tensors: skrl keeps them past the next step.
    assert obs.data_ptr() != task.obs["policy"].data_ptr()
    assert env.state().data_ptr() != task.obs["critic"].data_ptr()
    kept = obs.clone()
    task.episode_length.fill_(task.max_episode_length - 1)
    _, _, terminated, truncated, _ = env.step(torch.zeros(4, 1))
    assert truncated.all() and not terminated.any(), "time-outs reach skrl as truncated"
    assert torch.equal(obs, kept)


def test_a_plain_task_has_no_states_and_the_critic_reads_the_observations() -> None:
    env = SkrlEnv(phalanx.make("cartpole", num_envs=2, device="cpu"))
    assert env.state_space is None and env.state() is None
    agent = ppo_agent(phalanx.train_cfg("cartpole"), env)
    obs, _ = env.reset()
    value, _ = agent.value.act({"observations": obs, "states": None}, role="value")
    assert value.shape == (2, 1)


def test_images_are_refused() -> None:
    env = SkrlEnv(phalanx.make("cartpole", num_envs=2, device="cpu"))
    with pytest.raises(ConfigError, match="vector observations only"):
        ppo_cfg(phalanx.train_cfg("cartpole-rgb"), env)


def _skrl_on_two_cpu_ranks(what: str, flags: list[str]) -> subprocess.CompletedProcess:
    """`phalanx train cartpole --trainer skrl FLAGS` as a torchrun job of two CPU ranks (gloo in
    place of the NCCL group skrl starts; tests/dist_worker.py's WHAT)."""
    worker = str(Path(__file__).parents[1] / "dist_worker.py")
    flags = ["cartpole", "--trainer", "skrl", "--num-envs", "16", "--distributed", "--logger", "none", *flags]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    return subprocess.run([*command, worker, "cli", what, "--", *flags], capture_output=True, text=True, timeout=600)


def test_skrl_trains_under_torchrun_and_rank_0_alone_writes_checkpoints(tmp_path: Path) -> None:
    """Both ranks finish, the run holds one row per iteration with both ranks' frames, and rank 0
    writes the last checkpoint. skrl makes no checkpoint directory on other ranks: rank 1's own
    last checkpoint once failed there and left rank 0 waiting in its last collective."""
    run = _skrl_on_two_cpu_ranks("library-on-gloo", ["--max-iterations", "3", "--run-dir", str(tmp_path / "run")])
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = phalanx.train_cfg("cartpole").num_steps_per_env
    assert [row["frames"] for row in rows] == [2 * 16 * steps * i for i in (1, 2, 3)]
    saved = [path.name for path in (tmp_path / "run" / "checkpoints").iterdir()]
    assert saved == [f"agent_{3 * steps}.pt"]


def test_a_library_rank_that_hangs_is_named_and_the_job_stops(tmp_path: Path) -> None:
    """Rank 1 hangs in its 20th env step (iteration 1) while rank 0 waits for it in skrl's update:
    the stall watchdog names rank 1 and where it is, and torchrun stops the job, as in phalanx's
    own runs, instead of both waiting for the backend's timeout."""
    flags = ["--max-iterations", "50", "--stall-timeout-s", "5", "--run-dir", str(tmp_path / "run")]
    start = time.time()
    run = _skrl_on_two_cpu_ranks("library-on-gloo-hang", flags)
    assert run.returncode != 0
    assert time.time() - start < 90
    assert "rank(s) 1 stopped behind the others (rank 1 in 'iteration 1')" in run.stderr, run.stderr[-3000:]
