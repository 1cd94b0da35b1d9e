"""Bad input gets a clear error naming what was wrong and what is allowed."""

from __future__ import annotations

import pytest
import torch

import phalanx
from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.training.registry import UnknownTaskError, registered_tasks


def test_unknown_task_lists_registered_names() -> None:
    with pytest.raises(UnknownTaskError) as info:
        phalanx.make("antt", num_envs=2, device="cpu")
    assert "'antt'" in str(info.value)
    assert all(name in str(info.value) for name in registered_tasks())


@pytest.mark.parametrize("num_envs", [0, -3, 2.5, True, "8"])
def test_num_envs_must_be_a_positive_integer(num_envs) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        phalanx.make("cartpole", num_envs=num_envs, device="cpu")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decimation", 0),
        ("max_qvel", 0.0),
        ("max_qvel", float("nan")),
        ("iterations", 0),
        ("ls_iterations", 2.5),
        ("tolerance", -1.0),
    ],
)
def test_bad_sim_settings_name_the_field(field: str, value) -> None:
    cfg = phalanx.env_cfg("cartpole")
    setattr(cfg.sim, field, value)
    with pytest.raises(ValueError, match=f"sim.{field}: must be .*, got {value}"):
        phalanx.make(cfg, num_envs=2, device="cpu")


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "tpu", ""])
def test_bad_device_string(device: str) -> None:
    with pytest.raises(ValueError, match="device: got .* allowed: 'cpu', 'cuda' or 'cuda:K'"):
        phalanx.make("cartpole", num_envs=2, device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_cuda_without_gpu_says_so() -> None:
    with pytest.raises(ValueError, match="sees no CUDA GPU"):
        phalanx.make("cartpole", num_envs=2, device="cuda")


@pytest.fixture(scope="module")
def env():
    return make_cpu("cartpole", num_envs=4)


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (torch.zeros(4, 2), ValueError, r"actions: expected shape \(4, 1\), got \(4, 2\)"),
        (torch.zeros(3, 1), ValueError, r"actions: expected shape \(4, 1\), got \(3, 1\)"),
        (torch.zeros(4, 1, device="meta"), ValueError, "actions: expected device cpu, got meta"),
        (torch.zeros(4, 1, dtype=torch.long), ValueError, "actions: expected a floating-point tensor"),
        ([[0.0]] * 4, TypeError, "actions: expected a torch.Tensor, got list"),
    ],
)
def test_bad_actions(env, actions, error, message) -> None:
    with pytest.raises(error, match=message):
        env.step(actions)


def test_nan_actions_act_as_zero() -> None:
    """Documented: non-finite actions are replaced by 0 (they never reach the physics), and counted."""
    a, b = make_cpu("cartpole", num_envs=4, seed=2), make_cpu("cartpole", num_envs=4, seed=2)
    bad = torch.tensor([[float("nan")], [float("inf")], [-float("inf")], [0.0]])
    obs_a, reward_a, *_ = a.step(bad)
    obs_b, reward_b, *_ = b.step(torch.zeros(4, 1))
    assert torch.equal(obs_a["policy"], obs_b["policy"]) and torch.equal(reward_a, reward_b)
    assert torch.isfinite(obs_a["policy"]).all()
    a.step(bad)
    assert int(a.nonfinite_actions) == 6 and int(b.nonfinite_actions) == 0  # counted, and reported:
    assert a.report_invalid() == ["6 env steps got a NaN/inf action (applied as 0): the policy's output was not finite"]


def test_bad_reset_mask(env) -> None:
    with pytest.raises(ValueError, match="mask: expected a bool tensor of shape"):
        env.reset(torch.ones(3, dtype=torch.bool))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("func", "x", "env.rewards.alive.func: must be a function or a Term class, got a str"),
        ("weight", "heavy", "env.rewards.alive.weight: must be a finite number, got 'heavy'"),
        ("params", [1], "env.rewards.alive.params: must be a dict, got a list"),
    ],
)
def test_a_wrong_typed_term_field_is_named(field: str, value, message: str) -> None:
    cfg = phalanx.env_cfg("cartpole")
    setattr(cfg.rewards["alive"], field, value)
    with pytest.raises(ConfigError, match=f"^{message}$"):
        phalanx.make(cfg, num_envs=2, device="cpu")
