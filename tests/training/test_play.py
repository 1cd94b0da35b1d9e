"""phalanx play without a trained policy: zero or random actions in a registered task."""

from __future__ import annotations

import signal

import pytest
import torch

from helpers import make_cpu, signal_in_a_weakref_callback
from phalanx.cli import main
from phalanx.training.play import untrained_policy

PLAY = ["play", "cartpole", "--device", "cpu", "--num-envs", "4", "--steps", "20"]


def test_zero_and_random_actions() -> None:
    env = make_cpu("cartpole", num_envs=3)
    obs = env.reset()
    assert torch.equal(untrained_policy("zero", env, 0)(obs), torch.zeros(3, env.action_dim))
    first, again = untrained_policy("random", env, 7), untrained_policy("random", env, 7)
    a, b = first(obs), first(obs)
    assert a.abs().max() <= 1 and not torch.equal(a, b), "drawn anew every step, within [-1, 1]"
    assert torch.equal(again(obs), a), "seeded"


def test_play_policy_runs_without_a_checkpoint(capsys) -> None:
    assert main([*PLAY, "--policy", "random"]) == 0
    assert "episodes finished in 20 steps x 4 envs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy", "bogus"], "--policy: got 'bogus'; allowed: zero, random"),
        (["--policy", "zero", "--checkpoint", "last"], "--checkpoint: --policy zero plays without a trained run"),
        (["--policy", "zero", "--logger", "none"], "--logger: --policy zero plays without a trained run"),
    ],
)
def test_play_policy_refusals(flags: list[str], message: str, capsys) -> None:
    assert main([*PLAY, *flags]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the raise the callback drops
def test_a_stop_swallowed_while_play_starts_stops_it_at_its_first_step(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """SIGTERM landing where Python drops the raise (a weakref callback) while the env is built:
    play stops before its first step, one line, 143, instead of playing its whole rollout."""
    from phalanx.training import play

    steps = []
    run_episodes = play.run_episodes

    def counting(env, act, *args):
        signal_in_a_weakref_callback(signal.SIGTERM)
        return run_episodes(env, lambda obs: steps.append(1) or act(obs), *args)

    monkeypatch.setattr(play, "run_episodes", counting)
    assert main(["play", "cartpole", "--policy", "zero", "--device", "cpu", "--num-envs", "4", "--steps", "50"]) == 143
    assert capsys.readouterr().err.strip() == "phalanx play: stopped by SIGTERM"
    assert not steps


def test_play_out_writes_the_episodes_for_the_docs_play_table(tmp_path, capsys) -> None:
    """--out: the episodes' means as a bench.json (command without --out, date, machine); the
    docs' play table puts a trained policy beside zero actions."""
    import json

    run = tmp_path / "run"
    train = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    assert main([*train, "--max-iterations", "2", "--run-dir", str(run)]) == 0
    raw = tmp_path / "results" / "play"
    play = ["play", "cartpole", "--device", "cpu", "--num-envs", "4", "--steps", "100"]
    assert main([*play, "--checkpoint", str(run), "--out", str(raw / "trained.json")]) == 0
    assert main([*play, "--policy", "zero", "--out", str(raw / "zero.json")]) == 0
    zero = json.loads((raw / "zero.json").read_text())
    assert zero["kind"] == "play" and {"date", "machine", "device"} <= set(zero)
    assert zero["command"] == "phalanx play cartpole --device cpu --num-envs 4 --steps 100 --policy zero"
    (result,) = zero["results"]
    assert result["policy"] == "zero actions" and result["num_envs"] == 4 and result["steps"] == 100
    assert result["episodes"] >= 4 and 0 < result["mean_episode_length"] <= 100, "the pole falls within 100 steps"
    page = tmp_path / "page.md"
    page.write_text("<!-- bench-table play: results/play/*.json -->\n<!-- bench-table end -->\n")
    capsys.readouterr()
    assert main(["bench", "docs", str(page)]) == 0
    text = page.read_text()
    assert "| task | policy | envs x steps | episodes | mean episode length | mean return |" in text
    assert "| cartpole | trained, iteration 2 | 4 x 100 |" in text and "| cartpole | zero actions | 4 x 100 |" in text


def test_play_out_must_be_a_json_file(tmp_path, capsys) -> None:
    assert main([*PLAY, "--policy", "zero", "--out", str(tmp_path / "episodes.txt")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--out: must name a .json file, got '{tmp_path}/episodes.txt'")


def test_play_counts_every_step_in_an_episode_that_finished_or_one_still_running() -> None:
    """Episodes cut by the play's end are reported beside those that finished: every env step
    lies in exactly one of them, and their returns add up to every reward the env gave."""
    from phalanx.training.play import run_episodes

    env = make_cpu("cartpole", num_envs=4)
    total, step = torch.zeros(()), env.step

    def summing(actions: torch.Tensor):
        out = step(actions)
        total.add_(out[1].sum())
        return out

    env.step = summing
    episodes = run_episodes(env, untrained_policy("random", env, 0), 120)
    running = episodes.running
    assert episodes.returns and running.returns, "some of each"
    assert sum(episodes.lengths) + sum(running.lengths) == 120 * 4
    assert sum(episodes.returns) + sum(running.returns) == pytest.approx(total.item(), rel=1e-5)
    assert set(running.metrics) == set(env.cfg.metrics)
    cut = len(running.returns)
    assert f"; {cut} still running: mean return {sum(running.returns) / cut:.2f}" in episodes.summary()
    assert episodes.means()["running"]["episodes"] == cut
