"""rl_games' own trainer learns a phalanx task through `RlGamesVecEnv`: the contract holds, the
returns rise on a fixed seed, and checkpoints land where phalanx asks."""

from __future__ import annotations

from pathlib import Path

import rl_games
import torch
from rl_games.torch_runner import Runner

import phalanx
from phalanx.wrappers.rl_games import RlGamesVecEnv, learn, register, runner_config


def _return_per_env(env: RlGamesVecEnv, player, steps: int = 150) -> float:
    """Reward summed over `steps` steps of the player's deterministic actions, averaged over envs
    (episodes restart)."""
    obs, total = env.reset(), 0.0
    for _ in range(steps):
        obs, reward, _, _ = env.step(player.get_action(obs["obs"], is_deterministic=True))
        total += float(reward.mean())
    return total


def _player(train: phalanx.TrainCfg, env: RlGamesVecEnv, experiment_dir: Path):
    """rl_games' own player of the config's network (untrained until `restore`)."""
    register(env)
    runner = Runner()
    runner.load(runner_config(train, env, experiment_dir))
    player = runner.create_player()
    player.has_batch_dimension = True
    return player


def test_rl_games_learns_cartpole(tmp_path: Path) -> None:
    train = phalanx.train_cfg("cartpole")
    train.max_iterations = train.save_interval = 8
    env = phalanx.make("cartpole", num_envs=64, device="cpu", seed=0)
    adapter = RlGamesVecEnv(env)
    player = _player(train, adapter, tmp_path)
    before = _return_per_env(adapter, player)
    learn(train, env, tmp_path)
    checkpoint = next((tmp_path / "nn").glob("last_cartpole_ep_8_*.pth"))  # two: the 8th and the last
    player.restore(str(checkpoint))
    after = _return_per_env(adapter, player)
    assert after > before + 50, (before, after)  # 24 -> 140 of at most 150 when written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nn"], "no TensorBoard events of rl_games' own"


def test_the_contract_rl_games_reads() -> None:
    env = phalanx.make("cartpole", num_envs=4, device="cpu")
    adapter = RlGamesVecEnv(env)
    info = adapter.get_env_info()
    assert info["observation_space"].shape == env.obs["policy"].shape[1:] and "state_space" not in info
    assert info["action_space"].shape == (1,)
    raw = {}

    def step(actions: torch.Tensor):
        raw["out"] = env_step(actions)
        return raw["out"]

    env_step, env.step = env.step, step
    obs, reward, done, infos = adapter.step(torch.zeros(4, 1))
    assert set(obs) == {"obs"} and obs["obs"].shape == (4, *info["observation_space"].shape)
    assert obs["obs"].dtype == reward.dtype == torch.float32
    assert reward.shape == done.shape == infos["time_outs"].shape == (4,)
    assert done.dtype == infos["time_outs"].dtype == torch.bool
    env_obs, env_reward, _, env_truncated, env_extras = raw["out"]
    ours = (obs["obs"], reward, done, infos["time_outs"])
    theirs = (env_obs["policy"], env_reward, env_extras["episode"]["done"], env_truncated)
    assert all(a.data_ptr() != b.data_ptr() for a in ours for b in theirs), "copies, not the env's buffers"
    env.episode_length.fill_(env.max_episode_length - 1)
    _, _, done, infos = adapter.step(torch.zeros(4, 1))
    assert done.all() and infos["time_outs"].all(), "time-outs reach rl_games"


def test_a_critic_group_is_rl_games_central_value(tmp_path: Path) -> None:
    cfg = phalanx.env_cfg("cartpole")
    cfg.observations["critic"] = dict(cfg.observations["policy"])
    env = phalanx.make(cfg, num_envs=8, device="cpu")
    adapter = RlGamesVecEnv(env)
    obs = adapter.reset()
    assert set(obs) == {"obs", "states"} and adapter.get_env_info()["state_space"].shape == obs["states"].shape[1:]
    train = phalanx.train_cfg("cartpole")
    train.max_iterations, train.policy.critic_hidden_dims = 1, (16,)
    learn(train, env, tmp_path)
    (checkpoint,) = (tmp_path / "nn").glob("last_cartpole_ep_1_*.pth")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nn"], "the central value's events neither"
    critic = torch.load(checkpoint, weights_only=False)["assymetric_vf_nets"]  # rl_games' spelling
    assert any(value.shape == (16, obs["states"].shape[1]) for value in critic.values())


def test_the_library_is_not_the_adapter() -> None:
    """phalanx/wrappers/rl_games.py shares the library's name; its imports reach the library."""
    assert Path(rl_games.__file__).parent.name == "rl_games" and "phalanx" not in rl_games.__file__
