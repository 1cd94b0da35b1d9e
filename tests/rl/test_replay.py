"""The replay buffer: each env's ring wraps around, n-step sums stop at an episode's end, and a
truncated episode bootstraps while a terminated one does not (sums by hand)."""

from __future__ import annotations

import pytest
import torch

from phalanx.rl.replay import ReplayBuffer


def _fill(rewards: list[float], capacity: int, terminated=(), truncated=()) -> ReplayBuffer:
    """One env whose step t has obs t, next obs t + 0.5 and reward rewards[t]."""
    buffer = ReplayBuffer(capacity, 1, {"policy": (1,)}, 1, torch.device("cpu"))
    for t, r in enumerate(rewards):
        buffer.write(
            {"policy": torch.tensor([[float(t)]])},
            torch.zeros(1, 1),
            torch.tensor([r]),
            {"policy": torch.tensor([[t + 0.5]])},
            torch.tensor([t in terminated]),
            torch.tensor([t in truncated]),
        )
        buffer.advance()
    return buffer


def _by_start(buffer: ReplayBuffer, n_step: int, gamma: float) -> dict[float, dict[str, float]]:
    batch = buffer.sample(4096, n_step, gamma, torch.Generator().manual_seed(0))
    out = {}
    for i in range(4096):
        out[float(batch["obs"]["policy"][i, 0])] = {
            "reward": float(batch["reward"][i]),
            "discount": float(batch["discount"][i]),
            "bootstrap": float(batch["bootstrap"][i]),
            "next": float(batch["next_obs"]["policy"][i, 0]),
        }
    return out


def test_a_full_ring_keeps_the_newest_steps() -> None:
    buffer = _fill([10.0, 11.0, 12.0, 13.0, 14.0, 15.0], capacity=4)
    assert buffer.size == 4 and buffer.pos == 2
    assert sorted(_by_start(buffer, 1, 0.9)) == [2.0, 3.0, 4.0, 5.0]


def test_n_step_sums_stop_at_the_episodes_end() -> None:
    """Rewards r_t = t; step 2 terminated, step 5 truncated; n = 3, gamma = 0.5."""
    samples = _by_start(_fill([0, 1, 2, 3, 4, 5, 6, 7], 8, terminated={2}, truncated={5}), 3, 0.5)
    assert sorted(samples) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "starts with 3 steps after them"
    expected = {
        0.0: (0 + 0.5 * 1 + 0.25 * 2, 0.125, 0.0, 2.5),  # ends terminated at 2: no bootstrap
        1.0: (1 + 0.5 * 2, 0.25, 0.0, 2.5),
        2.0: (2, 0.5, 0.0, 2.5),
        3.0: (3 + 0.5 * 4 + 0.25 * 5, 0.125, 1.0, 5.5),  # ends truncated at 5: bootstraps from its final obs
        4.0: (4 + 0.5 * 5, 0.25, 1.0, 5.5),
        5.0: (5, 0.5, 1.0, 5.5),
    }
    for start, (reward, discount, bootstrap, next_obs) in expected.items():
        got = samples[start]
        assert got["reward"] == pytest.approx(reward), start
        assert got["discount"] == pytest.approx(discount), start
        assert (got["bootstrap"], got["next"]) == (bootstrap, next_obs), start


def test_n_step_sums_do_not_cross_the_write_position() -> None:
    """A wrapped ring of 4 holding steps 2..5 (no episode end): with n = 2 the newest step is not a
    start, and step 4's sum is r_4 + gamma r_5."""
    samples = _by_start(_fill([0, 1, 2, 3, 4, 5], 4), 2, 0.5)
    assert sorted(samples) == [2.0, 3.0, 4.0]
    assert samples[4.0]["reward"] == pytest.approx(4 + 0.5 * 5) and samples[4.0]["next"] == 5.5


def test_the_buffers_state_restores_it() -> None:
    buffer = _fill([0, 1, 2, 3, 4], 4, terminated={1})
    copy = ReplayBuffer(4, 1, {"policy": (1,)}, 1, torch.device("cpu"))
    copy.load_state_dict(buffer.state_dict())
    assert _by_start(copy, 2, 0.9) == _by_start(buffer, 2, 0.9)
