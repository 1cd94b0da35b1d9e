"""An env step's random numbers: counted once, drawn in one call per step, handed out as slices."""

from __future__ import annotations

import pytest
import torch

from helpers import make_cpu
from phalanx.envs.random_numbers import StepRandoms


def _step(randoms: StepRandoms, shapes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    randoms.begin_step()
    draws = [randoms.uniform(shape).clone() for shape in shapes]
    randoms.end_step()
    return draws


def test_the_first_step_counts_and_later_steps_slice_one_fresh_draw() -> None:
    randoms = StepRandoms(0, torch.device("cpu"))
    reference = torch.Generator().manual_seed(0)
    shapes = [(4, 3), (4,), (2, 2, 2)]
    counted = _step(randoms, shapes)  # no pool yet: straight from the generator, counted
    assert randoms.counted and len(randoms.pool) == 12 + 4 + 8
    for draw, shape in zip(counted, shapes, strict=True):
        torch.testing.assert_close(draw, torch.rand(shape, generator=reference), rtol=0, atol=0)
    pool = torch.rand(24, generator=reference)  # the next step: one draw, sliced in order
    sliced = _step(randoms, shapes)
    torch.testing.assert_close(torch.cat([d.flatten() for d in sliced]), pool, rtol=0, atol=0)
    torch.testing.assert_close(_step(randoms, shapes)[0].flatten(), torch.rand(24, generator=reference)[:12])
    outside = randoms.uniform((5,))  # outside a step: from the generator again
    torch.testing.assert_close(outside, torch.rand(5, generator=reference), rtol=0, atol=0)


def test_a_step_that_takes_more_than_counted_is_refused() -> None:
    randoms = StepRandoms(0, torch.device("cpu"))
    _step(randoms, [(4,)])
    randoms.begin_step()
    randoms.uniform((3,))
    with pytest.raises(RuntimeError, match="more than the 4 random numbers"):
        randoms.uniform((2,))


def test_randint_covers_its_range_evenly() -> None:
    values = StepRandoms(3, torch.device("cpu")).randint((60000,), -2, 4)
    assert values.dtype == torch.int64
    counts = torch.bincount(values + 2, minlength=6)
    assert len(counts) == 6 and int(counts.min()) > 9500 and int(counts.max()) < 10500


def test_env_steps_draw_fresh_numbers_and_a_state_replays_them() -> None:
    env = make_cpu("anymal-flat", num_envs=4, seed=2)  # observation noise, commands, pushes, resets
    actions = torch.zeros(4, env.action_dim)
    env.step(actions)
    size = len(env.random.pool)
    assert size > 0
    state = env.state_dict()
    first = env.step(actions)[0]["policy"].clone()
    second = env.step(actions)[0]["policy"].clone()
    assert len(env.random.pool) == size
    env.load_state_dict(state)
    torch.testing.assert_close(env.step(actions)[0]["policy"], first, rtol=0, atol=0)
    assert not torch.equal(first, second)
