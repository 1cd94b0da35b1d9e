"""The start-up tables say what an action drives as export's policy.json does: the formula with its
span, and the clamp to each actuator's control range."""

from __future__ import annotations

import io

from rich.console import Console

import phalanx
from phalanx.envs.term_tables import print_term_tables
from phalanx.training.export import drive


def _printed(task: str) -> str:
    env = phalanx.make(task, num_envs=2, device="cpu", verbose=False)
    out = io.StringIO()
    print_term_tables(env, Console(file=out, width=200))
    return " ".join(out.getvalue().split())  # a table's title wraps at the table's width


def test_the_actions_table_gives_the_formula_and_each_control_range() -> None:
    env = phalanx.make("cartpole", num_envs=2, device="cpu", verbose=False)
    (low, high) = drive(env, 1.0, None)["ctrl_range"][0]
    printed = _printed("cartpole")
    assert "ctrl = clamp(offset + scale * clip(action), ctrlrange)" in printed
    assert f"[{low:g}, {high:g}]" in printed


def test_actions_over_the_control_range_say_so() -> None:
    assert "ctrl = clamp(middle + half-range * scale * clip(action), ctrlrange)" in _printed("shadow-cube")
