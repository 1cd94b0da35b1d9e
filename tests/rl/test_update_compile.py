"""The PPO update compiled in a second process (`phalanx.rl.update_compile`): what the trainer's
first update then loads from inductor's cache, and what happens when that process fails."""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from collections import Counter

import torch
from test_ppo_math import _reference_update
from torch._dynamo.utils import counters

from phalanx.rl import update_compile
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.ppo import PPOCfg

SPEC = update_compile.UpdateSpec(
    policy=PolicyCfg(actor_hidden_dims=(24, 24), critic_hidden_dims=(24,)),
    algo=PPOCfg(num_learning_epochs=2, num_mini_batches=3, learning_rate=3e-3),
    observation_spec={"policy": (7,)}, action_dim=2, num_envs=6, num_steps=4, normalize=False, tf32=False,
    bf16_update=False, compile_update=True, image_dtype="uint8", device="cpu",
)  # fmt: skip
"""Sizes no other test compiles, so the first update's cache hits can only come from the second process."""


def test_the_update_compiled_in_a_second_process_is_what_the_first_update_loads(tmp_path, monkeypatch) -> None:
    """A trainer with a compiled update starts a process that compiles it (`update_compile`)
    while the env's step compiles. PPO's first update then loads both graphs, forward and
    backward, from inductor's cache, compiles nothing of its own, and takes the plain update's
    steps."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # for this process and the other

    def compiles() -> tuple[int, int]:
        return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]

    spec = SPEC
    assert update_compile.finish(update_compile.start(spec), timeout_s=600) == 0
    torch.manual_seed(0)
    policy = spec.actor_critic()
    reference = copy.deepcopy(policy)
    ppo = spec.ppo(policy, torch.Generator(), capture=False, dist=None)
    s = ppo.storage
    for name in ("obs", "actions", "action_mean", "log_probs", "values", "advantages", "returns"):
        getattr(s, name).normal_()
    s.action_std.uniform_(0.5, 1.5)
    data = {name: getattr(s, name).reshape(24, *getattr(s, name).shape[2:]).clone() for name in s.columns}
    ppo.generator.manual_seed(123)
    hits, misses = compiles()
    ppo.update()
    assert compiles() == (hits + 2, misses), "forward and backward came from the cache, nothing was compiled"
    _reference_update(reference, spec.algo, data, torch.Generator().manual_seed(123))
    for mine, theirs in zip(policy.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


def test_a_failing_compile_process_ends_at_once_and_is_reported() -> None:
    """A process that cannot compile (here: an unknown image dtype) exits with an error status
    at once; the trainer then compiles on its own. One still running after the wait is stopped."""
    start = time.perf_counter()
    status = update_compile.finish(update_compile.start(dataclasses.replace(SPEC, image_dtype="no_such_dtype")))
    assert status not in (0, None) and time.perf_counter() - start < 60
    proc = update_compile.start(SPEC)
    assert update_compile.finish(proc, timeout_s=0.01) is None and proc.poll() is not None


def test_the_first_update_waits_for_the_process_unless_every_compile_here_came_from_the_cache(monkeypatch) -> None:
    """Once the env step's graphs all came from inductor's cache (a warm start), the update's most
    likely do too, sooner than the process ends: the trainer does not wait. With any miss, with
    nothing compiled yet, or before torch._dynamo is imported, it waits."""
    for hits, misses, wait in ((5, 0, False), (2, 3, True), (0, 0, True), (0, 1, True)):
        monkeypatch.setitem(counters, "inductor", Counter(fxgraph_cache_hit=hits, fxgraph_cache_miss=misses))
        assert update_compile.worth_waiting() is wait, (hits, misses)
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils")
    assert update_compile.worth_waiting()
