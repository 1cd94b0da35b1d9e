"""A policy observes its last action, so its actions can feed back into ever larger ones; every
builtin task that lets it clips its actions, and on franka-lift a policy that doubles its last
action every step keeps bounded observations and rewards."""

from __future__ import annotations

from helpers import make_cpu
from phalanx.envs.mdp import observations
from phalanx.training.registry import BUILTIN, env_cfg, registered_tasks


def test_every_builtin_task_that_observes_its_last_action_clips_it() -> None:
    unbounded, observing = [], []
    for name, spec in registered_tasks().items():
        if spec.module.removeprefix("phalanx.tasks.") not in BUILTIN:
            continue
        cfg = env_cfg(name)
        terms = [term for group in cfg.observations.values() for term in group.values()]
        if any(term.func is observations.last_action for term in terms):
            observing.append(name)
            if cfg.actions.clip is None:
                unbounded.append(name)
    assert {"franka-lift", "franka-reach", "anymal-flat"} <= set(observing), observing
    assert not unbounded, f"tasks feeding back unclipped actions: {unbounded}"


def test_a_policy_doubling_its_last_action_keeps_franka_lift_bounded() -> None:
    cfg = env_cfg("franka-lift")
    env = make_cpu(cfg, num_envs=2)
    env.reset()
    clip = cfg.actions.clip
    # The positive terms are at most 1 each, the action rate of clipped actions 8 x (2 clip)^2,
    # the arm's squared joint velocities 7 x max_qvel^2; weights are per second.
    weights = {name: abs(term.weight) for name, term in cfg.rewards.items()}
    penalties = weights.pop("action_rate") * 8 * (2 * clip) ** 2 + weights.pop("joint_vel") * 7 * cfg.sim.max_qvel**2
    bound = (sum(weights.values()) + penalties) * env.step_dt
    largest = 0.0
    for _ in range(80):  # 2^80: far past float32's range unclipped
        _, reward, *_ = env.step(2.0 * env.action + 1.0)
        assert env.action.abs().max() <= clip
        largest = max(largest, reward.abs().max().item())
    assert largest <= bound, (largest, bound)
    assert int(env.invalid_resets) == 0
