"""GAE, PPO losses and the observation normalizer against hand-computed values and numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from phalanx.rl.losses import gaussian_kl, surrogate_loss, value_loss
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.rl.storage import compute_gae
from phalanx.training.timing import IntervalTimer


def test_gae_by_hand() -> None:
    # One env, 3 steps, gamma 0.9, lambda 0.5; the episode ends after step 1 (d = 0, 1, 0).
    # r = (1, 2, 3), V = (0.5, 1.0, 1.5), V(s_3) = 2.0.
    # delta_2 = 3 + 0.9 * 2.0 - 1.5 = 3.3             A_2 = 3.3
    # delta_1 = 2 + 0 - 1.0 = 1.0 (done: no bootstrap) A_1 = 1.0 (done: no carry)
    # delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4             A_0 = 1.4 + 0.9 * 0.5 * 1.0 = 1.85
    # returns = A + V = (2.35, 2.0, 4.8)
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [1.5]])
    dones = torch.tensor([[0.0], [1.0], [0.0]])
    advantages, returns = torch.zeros(3, 1), torch.zeros(3, 1)
    compute_gae(rewards, values, dones, torch.tensor([2.0]), 0.9, 0.5, advantages, returns)
    torch.testing.assert_close(advantages[:, 0], torch.tensor([1.85, 1.0, 3.3]))
    torch.testing.assert_close(returns[:, 0], torch.tensor([2.35, 2.0, 4.8]))


def test_surrogate_loss_by_hand() -> None:
    # ratios r = exp(logp - logp_old) = (1.5, 0.5), advantages (1, -1), clip 0.2:
    # sample 0: max(-1 * 1.5, -1 * 1.2) = -1.2; sample 1: max(1 * 0.5, 1 * 0.8) = 0.8; mean = -0.2.
    old = torch.zeros(2)
    new = torch.log(torch.tensor([1.5, 0.5]))
    loss = surrogate_loss(new, old, torch.tensor([1.0, -1.0]), clip=0.2)
    torch.testing.assert_close(loss, torch.tensor(-0.2))


def test_value_loss_by_hand() -> None:
    # old values (0, 0), new (1, -0.1), returns (2, 0), clip 0.2:
    # unclipped errors: (1 - 2)^2 = 1, (-0.1)^2 = 0.01
    # clipped values: 0 + clamp(1, +-0.2) = 0.2 -> (0.2 - 2)^2 = 3.24; -0.1 -> 0.01
    # clipped loss: mean(max(1, 3.24), max(0.01, 0.01)) = 1.625; plain: mean(1, 0.01) = 0.505
    old, new, returns = torch.zeros(2), torch.tensor([1.0, -0.1]), torch.tensor([2.0, 0.0])
    torch.testing.assert_close(value_loss(new, old, returns, 0.2, clipped=True), torch.tensor(1.625))
    torch.testing.assert_close(value_loss(new, old, returns, 0.2, clipped=False), torch.tensor(0.505))


def test_clipped_losses_have_the_value_and_gradient_of_their_max_form() -> None:
    """The losses pick the larger term with a where (fewer kernels); value and gradient must be
    those of torch.maximum over the clamped term, with ratios and value changes on both sides of
    the clip range."""
    g = torch.Generator().manual_seed(0)
    n, clip = 4096, 0.2
    advantages, old_log_prob = torch.randn(n, generator=g), torch.randn(n, generator=g)
    old_values, returns = torch.randn(n, generator=g), torch.randn(n, generator=g)
    log_prob = (old_log_prob + 0.4 * torch.randn(n, generator=g)).requires_grad_()
    values = (old_values + 0.4 * torch.randn(n, generator=g)).requires_grad_()

    ratio = torch.exp(log_prob - old_log_prob)
    reference = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)).mean()
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)
    reference_v = torch.max((values - returns).square(), (clipped_values - returns).square()).mean()
    (reference_grad,) = torch.autograd.grad(reference, log_prob)
    (reference_v_grad,) = torch.autograd.grad(reference_v, values)

    loss = surrogate_loss(log_prob, old_log_prob, advantages, clip)
    v_loss = value_loss(values, old_values, returns, clip, clipped=True)
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(v_loss, reference_v)
    torch.testing.assert_close(torch.autograd.grad(loss, log_prob)[0], reference_grad)
    torch.testing.assert_close(torch.autograd.grad(v_loss, values)[0], reference_v_grad)
    assert (reference_grad == 0).sum() > n // 10 and (reference_v_grad == 0).sum() > n // 10, "clips must bind"
    # Inside the clip range the clipped value equals the value only up to rounding (here 0.15 +
    # (1e-9 - 0.15) = 0 in float32), and may give the larger error: the gradient must still flow.
    value = torch.tensor([1e-9], requires_grad=True)
    loss = value_loss(value, torch.tensor([0.15]), torch.tensor([2e-9]), clip, clipped=True)
    assert float(torch.autograd.grad(loss, value)[0]) < 0


def test_fused_losses_match_the_torch_form() -> None:
    """The eager update's Warp kernel gives the loss, its terms and every parameter's gradient of
    the torch form (which torch.compile fuses), with ratios and values on both sides of the clip
    range, for each value-loss and advantage setting, and a privileged critic."""
    from phalanx.rl.models import ActorCritic
    from phalanx.rl.ppo import PPO, PPOCfg

    for clipped, normalize in ((True, True), (True, False), (False, True)):
        torch.manual_seed(0)
        policy = ActorCritic(5, 7, 3, (16, 16), (16,), "elu", 0.8)
        cfg = PPOCfg(use_clipped_value_loss=clipped, normalize_advantages=normalize, clip_param=0.1)
        spec = {"policy": (5,), "critic": (7,)}
        ppo = PPO(policy, cfg, spec, num_envs=64, num_steps=4, normalize=False, generator=torch.Generator())
        s = ppo.storage
        for name in ("obs", "critic_obs", "action_mean", "actions", "advantages", "returns"):
            getattr(s, name).normal_()
        s.action_std.uniform_(0.5, 1.5)
        with torch.no_grad():  # the rollout's policy: 0.15 away from the current one in log-probability and value
            dist, values = policy.distribution_and_value(s.obs, s.critic_obs)
            s.log_probs.copy_(dist.log_prob(s.actions) + 0.15 * torch.randn_like(s.log_probs))
            s.values.copy_(values + 0.15 * torch.randn_like(s.values))
        mb = next(ppo._minibatches(torch.randperm(256)))
        results = []
        for form in (ppo._minibatch_losses, ppo._fused_losses):
            policy.zero_grad(set_to_none=True)
            loss, terms = form(mb)
            loss.backward()
            results.append((loss.detach(), terms, [p.grad for p in policy.parameters()]))
        (loss, terms, grads), (fused_loss, fused_terms, fused_grads) = results
        torch.testing.assert_close(fused_loss, loss, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(fused_terms, terms, rtol=1e-5, atol=1e-6)
        for grad, fused_grad in zip(grads, fused_grads, strict=True):
            torch.testing.assert_close(fused_grad, grad, rtol=1e-4, atol=1e-6)
        with torch.no_grad():
            dist, values = policy.distribution_and_value(mb["obs"], mb["critic_obs"])
            ratio = torch.exp(dist.log_prob(mb["actions"]) - mb["log_probs"])
            change = values - mb["values"]
        assert 0 < ((ratio - 1).abs() > 0.1).float().mean() < 1, "the ratio clip must bind on some samples"
        assert 0 < (change.abs() > 0.1).float().mean() < 1, "the value clip must bind on some samples"
    # A ratio that overflows on samples whose clipped term is the larger, or a NaN output: the
    # torch form's gradient is not finite, so the minibatch is skipped; the kernel's must not be finite either.
    for broken in ("ratio", "nan"):
        mb = {name: value.clone() for name, value in mb.items()}
        if broken == "ratio":
            mb["log_probs"][:8] -= 200.0
            mb["advantages"][:8] = 5.0  # -A r is -inf: the clipped term is the larger
        finite = []
        for form in (ppo._minibatch_losses, ppo._fused_losses):
            policy.zero_grad(set_to_none=True)
            if broken == "nan":
                policy.log_std.data[0] = float("nan")
            loss, terms = form(mb)
            loss.backward()
            finite.append(
                (
                    bool(torch.isfinite(terms).all()),
                    all(bool(torch.isfinite(p.grad).all()) for p in policy.parameters()),
                )
            )
            policy.log_std.data[0] = 0.0
        assert finite[0] == finite[1] and not finite[0][1], (broken, finite)


def test_after_backward_adapts_the_rate_skips_and_sums() -> None:
    """The bookkeeping kernel between backward pass and optimizer step, case by case."""
    from phalanx.rl.loss_kernels import after_backward

    def run(terms: list[float], grad_norm: float, desired_kl: float | None, lr: float) -> tuple[float, ...]:
        """(learning rate, found_inf, skipped, *sums) after the kernel, from skipped 3 and sums 1."""
        state = torch.tensor(lr), torch.tensor(0.0), torch.tensor(3), torch.ones(len(terms) - 1)
        after_backward(torch.tensor(terms), torch.tensor(grad_norm), desired_kl, *state)
        return (float(state[0]), float(state[1]), int(state[2]), *state[3].tolist())

    big = torch.finfo(torch.float32).max
    assert run([1.0, 2.0, 3.0, 0.05, 0.0], 1.0, 0.01, 1e-3) == pytest.approx((1e-3 / 1.5, 0, 3, 2, 3, 4, 1.05))
    assert run([1.0, 2.0, 3.0, 0.001, 0.0], 1.0, 0.01, 9e-3) == pytest.approx((1e-2, 0, 3, 2, 3, 4, 1.001))
    assert run([1.0, 2.0, 3.0, 0.01, 0.0], 1.0, 0.01, 2e-3)[0] == pytest.approx(2e-3)  # within the band
    assert run([1.0, 2.0, 3.0, 0.05, 0.0], 1.0, None, 1e-3)[0] == pytest.approx(1e-3)  # fixed schedule
    nan, inf = float("nan"), float("inf")
    skipped = run([nan, inf, -inf, 0.001, nan], 1.0, 0.01, 1e-3)  # the rate stays; non-finite terms add as nan_to_num
    assert skipped == pytest.approx((1e-3, 1, 4, 1, big, -big, 1.001))
    assert run([1.0, 2.0, 3.0, 0.001, 0.0], inf, 0.01, 1e-3)[:3] == pytest.approx((1e-3, 1, 4))  # an infinite gradient


def test_gaussian_kl_by_hand() -> None:
    # KL(N(0, 1) || N(1, 2)) = ln 2 + (1 + 1) / (2 * 4) - 0.5 = 0.69315 + 0.25 - 0.5 = 0.44315, per dim;
    # two dims sum to 0.88629.
    kl = gaussian_kl(torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), torch.full((1, 2), 2.0))
    torch.testing.assert_close(kl, torch.tensor(2 * (math.log(2.0) + 0.25 - 0.5)))


def test_normalizer_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    batches = [rng.normal(loc=3.0, scale=2.0, size=(n, 5)) * rng.uniform(0.5, 2, 5) for n in (7, 64, 1, 300)]
    norm = EmpiricalNormalizer(5)
    for i, batch in enumerate(batches):  # commits after batches 0, 2 and 3: pending batches add up
        norm.accumulate(torch.as_tensor(batch, dtype=torch.float32))
        if i != 1:
            norm.commit()
    assert not norm.pending.any()
    data = np.concatenate(batches)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), data.var(axis=0), rtol=1e-4)
    assert int(norm.count) == len(data)
    x = torch.as_tensor(data[:3], dtype=torch.float32)
    expected = (data[:3] - data.mean(axis=0)) / np.sqrt(data.var(axis=0) + 1e-8)
    np.testing.assert_allclose(norm(x).numpy(), expected, rtol=1e-4, atol=1e-5)


def _tiny_trainer(task: str = "cartpole", num_envs: int = 8):
    from helpers import make_cpu
    from phalanx.training.registry import train_cfg
    from phalanx.training.trainer import Trainer

    cfg = train_cfg(task)
    cfg.num_steps_per_env = 4
    return Trainer(cfg, make_cpu(task, num_envs=num_envs), run_dir=None)


def test_non_finite_loss_skips_the_update_and_counts_it() -> None:
    trainer = _tiny_trainer()
    trainer.iterate()
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    lr = float(trainer.ppo.learning_rate)
    trainer.ppo.storage.advantages.fill_(float("nan"))
    stats = trainer.ppo.update()
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters(), strict=True))
    cfg = trainer.cfg.algo
    assert cfg.schedule == "adaptive" and float(stats["learning_rate"]) == lr, "skipped steps leave the schedule"
    assert int(stats["skipped_updates"]) == cfg.num_learning_epochs * cfg.num_mini_batches
    assert all(torch.isfinite(p).all() for p in trainer.policy.parameters())


def test_time_outs_bootstrap_from_the_final_observation() -> None:
    """A truncated step's stored reward is r + gamma * V(final_obs); a terminal one is r alone."""
    trainer = _tiny_trainer()
    env = trainer.env
    env.max_episode_length = 2  # every episode that survives 2 steps times out: the current ones too
    env.time_limit.fill_(2)
    gamma = trainer.cfg.algo.gamma
    seen = {}
    step = env.step

    def spy(actions):
        out = step(actions)
        seen.setdefault("outs", []).append((out[1].clone(), out[2].clone(), out[3].clone()))
        return out

    env.step = spy
    trainer.policy.value = lambda obs, image=None: torch.full((obs.shape[0],), 10.0)  # V = 10 everywhere
    trainer._collect(IntervalTimer(env.device))
    for t, (reward, terminated, truncated) in enumerate(seen["outs"]):
        expected = reward + gamma * 10.0 * truncated.float()
        torch.testing.assert_close(trainer.ppo.storage.rewards[t], expected)
        torch.testing.assert_close(trainer.ppo.storage.dones[t], (terminated | truncated).float())
    assert any(bool(tr.any()) for _, _, tr in seen["outs"]), "the test must see time-outs"


def _reference_update(policy, cfg, data: dict[str, torch.Tensor], generator: torch.Generator) -> list[float]:
    """rsl_rl's update written plainly: a minibatch gathers each field by index; torch.distributions
    for the Gaussian; a new Adam at the same learning rate. Returns each minibatch's KL."""
    from torch.distributions import Normal, kl_divergence

    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    total = len(data["obs"])
    batch = total // cfg.num_mini_batches
    kls = []
    for _ in range(cfg.num_learning_epochs):
        order = torch.randperm(total, generator=generator)
        for i in range(cfg.num_mini_batches):
            mb = {name: field[order[i * batch : (i + 1) * batch]] for name, field in data.items()}
            dist = Normal(policy.actor(mb["obs"]), policy.log_std.exp())
            ratio = torch.exp(dist.log_prob(mb["actions"]).sum(-1) - mb["log_probs"])
            adv = (mb["advantages"] - mb["advantages"].mean()) / (mb["advantages"].std() + 1e-8)
            surrogate = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param)).mean()
            values = policy.critic(mb["critic_obs"]).squeeze(-1)
            clipped = mb["values"] + (values - mb["values"]).clamp(-cfg.clip_param, cfg.clip_param)
            v_loss = torch.max((values - mb["returns"]) ** 2, (clipped - mb["returns"]) ** 2).mean()
            entropy = dist.entropy().sum(-1).mean()
            loss = surrogate + cfg.value_loss_coef * v_loss - cfg.entropy_coef * entropy
            with torch.no_grad():
                old = Normal(mb["action_mean"], mb["action_std"])
                kl = kl_divergence(old, Normal(dist.mean, dist.stddev)).sum(-1).mean().item()
            kls.append(kl)
            lr = optimizer.param_groups[0]["lr"]
            lr = lr / 1.5 if kl > 2 * cfg.desired_kl else lr * 1.5 if kl < cfg.desired_kl / 2 else lr
            optimizer.param_groups[0]["lr"] = min(max(lr, 1e-5), 1e-2)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            optimizer.step()
    return kls


def test_update_matches_a_plain_reference() -> None:
    """PPO's update (one shuffle per epoch of the packed samples, minibatches as row ranges, one
    all-reduce of gradients and loss terms) takes the same optimizer steps as the plain update,
    with and without a privileged critic group."""
    import copy

    from phalanx.rl.models import ActorCritic
    from phalanx.rl.ppo import PPO, PPOCfg

    for critic_dim in (None, 7):
        torch.manual_seed(0)
        policy = ActorCritic(5, critic_dim or 5, 3, (16, 16), (16,), "elu", 0.8)
        reference = copy.deepcopy(policy)
        spec = {"policy": (5,)} | ({"critic": (critic_dim,)} if critic_dim else {})
        cfg = PPOCfg(num_learning_epochs=2, num_mini_batches=3, learning_rate=3e-3)
        ppo = PPO(policy, cfg, spec, num_envs=6, num_steps=4, normalize=False, generator=torch.Generator())
        s = ppo.storage
        for name in ("obs", "critic_obs", "actions", "action_mean", "log_probs", "values", "advantages", "returns"):
            getattr(s, name).normal_()
        s.action_std.uniform_(0.5, 1.5)
        data = {name: getattr(s, name).reshape(24, *getattr(s, name).shape[2:]).clone() for name in s.columns}
        generator = torch.Generator().manual_seed(123)
        ppo.generator.manual_seed(123)
        out = ppo.update()
        kls = _reference_update(reference, cfg, data, generator)
        for mine, theirs in zip(policy.parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)
        assert math.isclose(float(out["loss/kl"]), sum(kls) / len(kls), rel_tol=1e-4)


def test_an_iteration_builds_no_autograd_graph_outside_the_update() -> None:
    """A tensor computed from a policy parameter with autograd on holds the parameter's gradient
    accumulator, bound to the CUDA stream it ran on. Alive when the update is captured into a CUDA
    graph (the trainer's action-std metric was, whenever something held the frame that computed
    it), it made the capture fail on a GPU ("operation would make the legacy stream depend on a
    capturing blocking stream"). Only the update may build autograd graphs."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    trainer = _tiny_trainer()
    in_update, outside = [False], []
    update = trainer.ppo.update

    def watched_update() -> dict[str, torch.Tensor]:
        in_update[0] = True
        try:
            return update()
        finally:
            in_update[0] = False

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            out = func(*args, **(kwargs or {}))
            tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            if not in_update[0] and any(t.grad_fn is not None for t in tensors):
                outside.append(getattr(func, "__name__", str(func)))
            return out

    trainer.ppo.update = watched_update
    with Watch():
        trainer.iterate()
        trainer.iterate()
    assert in_update == [False] and not outside, f"autograd graphs built outside the update by {outside}"
