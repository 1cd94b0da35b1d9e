"""The off-policy learners' settings (`phalanx train --algo td3|sac`, the `--algo.*` flags):
what FastTD3 and FastSAC share, and each one's own. Defaults: the papers' Isaac Lab
configurations (Seo et al., 2025). An iteration is `num_steps_per_env` env steps of every env,
each followed by `updates_per_step` gradient updates."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.errors import ConfigError, check_int, check_positive, check_range


@dataclass
class OffPolicyCfg:
    """What FastTD3 and FastSAC share: a replay buffer on the device, n-step returns, two
    distributional critics (C51) and their soft-updated targets, AdamW."""

    actor_learning_rate: float = 3e-4
    """AdamW learning rate of the actor."""
    critic_learning_rate: float = 3e-4
    """AdamW learning rate of the critics."""
    weight_decay: float = 0.1
    """AdamW weight decay of both."""
    buffer_size: int = 10240
    """Env steps each env's replay ring keeps (the buffer holds buffer_size x num_envs transitions)."""
    batch_size: int = 32768
    """Transitions per gradient update."""
    updates_per_step: int = 2
    """Gradient updates of the critics after each env step (the actor's: every `policy_delay`-th)."""
    learning_starts: int = 10
    """Env steps (of every env) the buffer holds before the first update (a resumed run without
    its buffer waits for as many again)."""
    n_step: int = 1
    """Steps of reward summed before bootstrapping (an episode's end stops the sum)."""
    gamma: float = 0.99
    """Discount factor."""
    tau: float = 0.1
    """Target critics move this share of the way to the critics after each update."""
    policy_delay: int = 2
    """The actor updates once per this many critic updates."""
    num_atoms: int = 251
    """Atoms of the critics' categorical return distribution."""
    v_min: float = -10.0
    """The lowest return the distribution's support holds."""
    v_max: float = 10.0
    """The highest."""
    clipped_double_q: bool = True
    """Learn from the smaller of the two target critics' values (the actor: of the critics')."""
    actor_hidden_dims: tuple[int, ...] = (512, 256, 128)
    """Hidden layer widths of the actor MLP (ReLU)."""
    critic_hidden_dims: tuple[int, ...] = (1024, 512, 256)
    """Hidden layer widths of each critic MLP (ReLU)."""
    init_scale: float = 0.01
    """Standard deviation of the actor's last layer's initial weights (its actions start near 0)."""
    action_bound: float = 1.0
    """The actor's actions lie in [-action_bound, action_bound] (tanh, scaled)."""
    max_grad_norm: float = 0.0
    """Gradient-norm clip of each network; 0: none."""
    checkpoint_buffer: bool = False
    """Each checkpoint also writes every rank's replay buffer (checkpoints/replay_last.rankR.pt,
    buffer_size x num_envs transitions: gigabytes on a GPU), so that `--resume` continues
    exactly; without it a resumed run refills its buffer before it updates again."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`algo.FIELD`), its value and what is allowed."""
        for name in ("actor_learning_rate", "critic_learning_rate", "tau", "action_bound", "init_scale"):
            check_positive(f"algo.{name}", getattr(self, name))
        check_range("algo.tau", self.tau, 0.0, 1.0)
        check_range("algo.weight_decay", self.weight_decay, low=0.0)
        for name in ("buffer_size", "batch_size", "updates_per_step", "n_step", "policy_delay"):
            check_int(f"algo.{name}", getattr(self, name))
        check_int("algo.learning_starts", self.learning_starts, minimum=0)
        if self.learning_starts >= self.buffer_size:
            raise ConfigError(
                f"got {self.learning_starts}; less than algo.buffer_size ({self.buffer_size}): updates start once the "
                "buffer holds more steps than this",
                "algo.learning_starts",
            )
        if self.n_step > self.buffer_size:
            raise ConfigError(f"got {self.n_step}; at most algo.buffer_size ({self.buffer_size})", "algo.n_step")
        check_range("algo.gamma", self.gamma, 0.0, 1.0)
        check_int("algo.num_atoms", self.num_atoms, minimum=2)
        if not self.v_max > self.v_min:
            raise ConfigError(f"got {self.v_max}; more than algo.v_min ({self.v_min})", "algo.v_max")
        for name in ("actor_hidden_dims", "critic_hidden_dims"):
            for width in getattr(self, name):
                check_int(f"algo.{name}", width)
        check_range("algo.max_grad_norm", self.max_grad_norm, low=0.0)


@dataclass
class TD3Cfg(OffPolicyCfg):
    """FastTD3: a deterministic tanh actor; each env explores with Gaussian noise of its own
    scale, and the critics' target action is smoothed with clipped noise."""

    policy_noise: float = 0.001
    """Standard deviation of the noise added to the target action (target policy smoothing)."""
    noise_clip: float = 0.5
    """The target action's noise is clipped to +- this."""
    std_min: float = 0.001
    """Each env explores with Gaussian noise of a standard deviation drawn from [std_min, std_max]
    when its episode starts."""
    std_max: float = 0.4
    """See `std_min`."""

    def check(self) -> None:
        super().check()
        check_range("algo.policy_noise", self.policy_noise, low=0.0)
        check_range("algo.noise_clip", self.noise_clip, low=0.0)
        check_range("algo.std_min", self.std_min, low=0.0)
        if self.std_max < self.std_min:
            raise ConfigError(f"got {self.std_max}; at least algo.std_min ({self.std_min})", "algo.std_max")


@dataclass
class SACCfg(OffPolicyCfg):
    """FastSAC: a tanh-squashed Gaussian actor whose entropy the return rewards at a temperature
    (alpha) tuned toward a target entropy. Its critics are FastTD3's distributional ones (the
    FastSAC reference learns scalar critics): the entropy bonus shifts each target atom."""

    alpha_init: float = 0.001
    """The temperature at the start."""
    alpha_learning_rate: float = 3e-4
    """Adam learning rate of log(alpha)."""
    target_entropy_per_action: float = -1.0
    """The entropy alpha is tuned toward, per action dimension (-1: SAC's usual -|A|)."""
    log_std_min: float = -5.0
    """The actor's log standard deviation (before the tanh) lies in [log_std_min, log_std_max]."""
    log_std_max: float = 2.0
    """See `log_std_min`."""

    def check(self) -> None:
        super().check()
        check_positive("algo.alpha_init", self.alpha_init)
        check_positive("algo.alpha_learning_rate", self.alpha_learning_rate)
        check_range("algo.target_entropy_per_action", self.target_entropy_per_action)
        check_range("algo.log_std_min", self.log_std_min)
        if not self.log_std_max > self.log_std_min:
            raise ConfigError(
                f"got {self.log_std_max}; more than algo.log_std_min ({self.log_std_min})", "algo.log_std_max"
            )


def off_policy_algos(**fields) -> dict[str, OffPolicyCfg]:
    """A task's settings for both off-policy learners (`register(..., algos=...)`), the shared
    `fields` (its return support, n-step, ...) set in each."""
    return {"td3": TD3Cfg(**fields), "sac": SACCfg(**fields)}
