"""PPO's minibatch in Warp kernels, for the eager update: the loss terms and their gradient with
respect to the policy's outputs, and the bookkeeping between the backward pass and the optimizer
step (`after_backward`, which compiled updates use too).

Written as torch operations, the loss terms of `phalanx.rl.losses` and their backward pass take
many small kernels per minibatch, which bound a small policy's eager update. Here one thread per
sample computes its terms and, in closed form, its gradient with respect to the action mean, the
log standard deviation and the value; a deterministic sum and a one-thread kernel finish the
means. torch.compile fuses the torch form by itself, so a compiled update keeps it;
`tests/rl/test_ppo_math.py` holds the two to the same values and gradients."""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from phalanx.core.warp_streams import launch
from phalanx.rl.gaussian import HALF_LOG_2PI

wp.set_module_options({"enable_backward": False})


@wp.func
def _clamp(x: float, low: float, high: float) -> float:
    """x clamped to [low, high], NaN staying NaN as in torch (Warp's clamp returns `low`)."""
    y = x
    if x < low:
        y = low
    if x > high:
        y = high
    return y


@wp.kernel
def _per_sample(
    mean: wp.array2d(dtype=wp.float32),
    log_std: wp.array(dtype=wp.float32),
    values: wp.array(dtype=wp.float32),
    actions: wp.array2d(dtype=wp.float32),
    old_log_prob: wp.array(dtype=wp.float32),
    advantages: wp.array(dtype=wp.float32),
    old_values: wp.array(dtype=wp.float32),
    returns: wp.array(dtype=wp.float32),
    old_mean: wp.array2d(dtype=wp.float32),
    old_std: wp.array2d(dtype=wp.float32),
    adv_std: wp.array(dtype=wp.float32),
    adv_mean: wp.array(dtype=wp.float32),
    normalize: int,
    clip: float,
    clipped_value: int,
    value_coef: float,
    inv_b: float,
    grad_mean: wp.array2d(dtype=wp.float32),
    grad_values: wp.array(dtype=wp.float32),
    rows: wp.array2d(dtype=wp.float32),
):
    """Sample i's surrogate, value error and KL (rows[i, 0:3]), the surrogate mean's gradient
    with respect to each log standard deviation (rows[i, 3:]), and the loss's gradient with
    respect to its action mean and value (grad_mean, grad_values)."""
    i = wp.tid()
    num_actions = mean.shape[1]
    adv = advantages[i]
    if normalize != 0:
        adv = (adv - adv_mean[0]) / (adv_std[0] + 1.0e-8)
    # log-probability of the stored action under the current Gaussian
    squares = wp.float32(0.0)
    log_std_sum = wp.float32(0.0)
    kl = wp.float32(0.0)
    for a in range(num_actions):
        z = (actions[i, a] - mean[i, a]) * wp.exp(-log_std[a])
        squares += z * z
        log_std_sum += log_std[a]
        std = wp.exp(log_std[a])
        s_old = old_std[i, a]
        d_mean = old_mean[i, a] - mean[i, a]
        kl += wp.log(std / s_old) + (s_old * s_old + d_mean * d_mean) / (2.0 * std * std) - 0.5
    log_prob = -0.5 * squares - (log_std_sum + float(num_actions) * HALF_LOG_2PI)
    # Clipped surrogate: the larger of -A r and -A clip(r); the gradient is -A r's where it is the
    # larger, times 0 elsewhere, as torch's backward multiplies: an infinite or NaN ratio then makes
    # the gradient NaN and the minibatch is skipped, as with the torch form.
    ratio = wp.exp(log_prob - old_log_prob[i])
    term = -adv * ratio
    clipped = -adv * _clamp(ratio, 1.0 - clip, 1.0 + clip)
    surrogate = clipped
    larger = wp.float32(0.0)
    if term >= clipped:
        surrogate = term
        larger = 1.0
    g = larger * term * inv_b  # d(mean surrogate) / d(log_prob_i)
    for a in range(num_actions):
        z = (actions[i, a] - mean[i, a]) * wp.exp(-log_std[a])
        grad_mean[i, a] = g * z * wp.exp(-log_std[a])
        rows[i, 3 + a] = g * (z * z - 1.0)
    # value error, clipped like the surrogate (inside the clip range the error itself, whichever is larger)
    error = values[i] - returns[i]
    value_term = error * error
    unclipped = wp.float32(1.0)
    if clipped_value != 0:
        change = values[i] - old_values[i]
        clipped_error = old_values[i] + _clamp(change, -clip, clip) - returns[i]
        if not (value_term >= clipped_error * clipped_error or wp.abs(change) <= clip):
            value_term = clipped_error * clipped_error
            unclipped = 0.0
    d_value = unclipped * 2.0 * error
    grad_values[i] = value_coef * inv_b * d_value
    rows[i, 0] = surrogate
    rows[i, 1] = value_term
    rows[i, 2] = kl


@wp.kernel
def _finish(
    sums: wp.array(dtype=wp.float32),
    log_std: wp.array(dtype=wp.float32),
    inv_b: float,
    value_coef: float,
    entropy_coef: float,
    loss: wp.array(dtype=wp.float32),
    terms: wp.array(dtype=wp.float32),
    grad_log_std: wp.array(dtype=wp.float32),
):
    """The means over the samples: the loss, its terms (surrogate, value, entropy, KL) and its
    gradient with respect to the log standard deviations."""
    num_actions = log_std.shape[0]
    entropy = float(num_actions) * (0.5 + HALF_LOG_2PI)
    for a in range(num_actions):
        entropy += log_std[a]
        grad_log_std[a] = sums[3 + a] - entropy_coef
    surrogate = sums[0] * inv_b
    value = sums[1] * inv_b
    total = surrogate + value_coef * value - entropy_coef * entropy
    loss[0] = total
    terms[0] = surrogate
    terms[1] = value
    terms[2] = entropy
    terms[3] = sums[2] * inv_b


@wp.kernel
def _after_backward(
    terms: wp.array(dtype=wp.float32),
    grad_norm: wp.array(dtype=wp.float32),
    adaptive: int,
    kl_high: float,
    kl_low: float,
    learning_rate: wp.array(dtype=wp.float32),
    found_inf: wp.array(dtype=wp.float32),
    skipped: wp.array(dtype=wp.int64),
    sums: wp.array(dtype=wp.float32),
):
    """One thread: the bookkeeping between a minibatch's backward pass and its optimizer step."""
    n = terms.shape[0] - 1  # the last term is 0 * loss: NaN unless the loss is finite
    bad = wp.isnan(terms[n] + 0.0 * grad_norm[0])
    if adaptive != 0:
        factor = wp.float32(1.0)
        if not bad:
            kl = terms[3]
            if kl > kl_high:
                factor = 1.0 / 1.5
            elif kl < kl_low:
                factor = 1.5
        learning_rate[0] = wp.clamp(learning_rate[0] * factor, 1.0e-5, 1.0e-2)
    found_inf[0] = 0.0
    if bad:
        found_inf[0] = 1.0
        skipped[0] = skipped[0] + wp.int64(1)
    for k in range(n):  # nan_to_num: a skipped minibatch adds 0
        x = terms[k]
        if wp.isnan(x):
            x = 0.0
        elif wp.isinf(x):
            x = wp.sign(x) * 3.4028234663852886e38
        sums[k] = sums[k] + x


def after_backward(
    terms: torch.Tensor,
    grad_norm: torch.Tensor,
    desired_kl: float | None,
    learning_rate: torch.Tensor,
    found_inf: torch.Tensor,
    skipped: torch.Tensor,
    sums: torch.Tensor,
) -> None:
    """After a minibatch's backward pass, in one kernel (about 20 small torch kernels before): a
    minibatch whose loss or gradient norm is not finite is skipped (`found_inf` 1, `skipped` + 1);
    with `desired_kl` (the adaptive schedule) the learning rate is divided by 1.5 when the step's KL
    (`terms[3]`) overshoots twice the target and multiplied by 1.5 below half of it, clamped to
    [1e-5, 1e-2]. A skipped minibatch leaves it: the unchanged policy's KL of ~0 would raise it to
    the cap (an anymal-rough run went from 1e-5 to 1e-2 over three skipped iterations and then took
    one step of KL 7.5). `sums` gains the terms but the last (0 * loss), non-finite ones as
    `torch.nan_to_num` makes them."""
    adaptive = desired_kl is not None
    kl = desired_kl if adaptive else 0.0
    inputs = [terms, grad_norm.view(1), int(adaptive), 2.0 * kl, kl / 2.0]
    outputs = [learning_rate.view(1), found_inf.view(1), skipped.view(1), sums]
    launch(_after_backward, 1, inputs, outputs, terms.device)


class PPOLossKernel:
    """`(loss, terms)` of a minibatch (terms: surrogate, value, entropy, KL) as `PPO`'s torch form
    computes them, from the policy's action means (B, A), log standard deviations (A,) and values
    (B,), with the gradient of the loss flowing back to those three. Warp loads the kernels'
    module at the first call (with `after_backward`'s), which must not be recorded into a CUDA
    graph: PPO's first update runs eagerly."""

    def __init__(
        self,
        device: torch.device,
        clip: float,
        clipped_value: bool,
        normalize: bool,
        value_coef: float,
        entropy_coef: float,
    ):
        self.device = device
        self.constants = (clip, int(clipped_value), value_coef)
        self.normalize, self.entropy_coef = normalize, entropy_coef

    def __call__(
        self, mean: torch.Tensor, log_std: torch.Tensor, values: torch.Tensor, mb: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return _Loss.apply(mean.float(), log_std, values.float(), mb, self)

    def forward(
        self, mean: torch.Tensor, log_std: torch.Tensor, values: torch.Tensor, mb: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, ...]:
        """loss (), terms (4,), and the loss's gradients with respect to mean, log_std and values."""
        batch, num_actions = mean.shape
        inv_b = 1.0 / batch
        if self.normalize:
            adv_std, adv_mean = torch.std_mean(mb["advantages"])
        else:
            adv_std = adv_mean = mean.new_zeros(())
        grad_mean, grad_values = torch.empty_like(mean), torch.empty_like(values)
        rows = mean.new_empty(batch, 3 + num_actions)
        loss, terms, grad_log_std = mean.new_empty(()), mean.new_empty(4), torch.empty_like(log_std)
        clip, clipped_value, value_coef = self.constants
        data = [mb[name] for name in ("actions", "log_probs", "advantages", "values", "returns")]
        data += [mb["action_mean"], mb["action_std"]]
        inputs = [mean, log_std, values, *data, adv_std.view(1), adv_mean.view(1)]
        inputs += [int(self.normalize), clip, clipped_value, value_coef, inv_b]
        launch(_per_sample, batch, inputs, [grad_mean, grad_values, rows], self.device)
        sums = rows.sum(dim=0)
        inputs = [sums, log_std, inv_b, value_coef, self.entropy_coef]
        launch(_finish, 1, inputs, [loss.view(1), terms, grad_log_std], self.device)
        return loss, terms, grad_mean, grad_log_std, grad_values


class _Loss(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, mean, log_std, values, mb, kernel: PPOLossKernel):  # noqa: ANN001, ANN205
        loss, terms, grad_mean, grad_log_std, grad_values = kernel.forward(mean, log_std, values, mb)
        ctx.save_for_backward(grad_mean, grad_log_std, grad_values)
        ctx.mark_non_differentiable(terms)
        return loss, terms

    @staticmethod
    def backward(ctx: Any, grad_loss, grad_terms):  # noqa: ANN001, ANN205
        grad_mean, grad_log_std, grad_values = ctx.saved_tensors
        return grad_loss * grad_mean, grad_loss * grad_log_std, grad_loss * grad_values, None, None
