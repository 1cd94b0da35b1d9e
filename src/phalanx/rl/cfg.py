"""The learner's configuration: PPO's hyperparameters and the policy's networks (a task's defaults
are part of its `TrainCfg`, in `phalanx.training.cfg`)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.errors import ConfigError, check_int, check_positive, check_range
from phalanx.rl.models import ACTIVATIONS
from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg


@dataclass
class PPOCfg:
    """PPO hyperparameters."""

    learning_rate: float = 1e-3
    """Adam's learning rate: where the adaptive schedule starts; with the fixed schedule, and while
    a student imitates its teacher, the rate throughout (a resumed run's too)."""
    schedule: str = "adaptive"
    """'adaptive': scale the learning rate by 1.5 toward `desired_kl` every minibatch; 'fixed'."""
    desired_kl: float = 0.01
    """Target KL divergence between the rollout policy and the updated one (adaptive schedule)."""
    num_learning_epochs: int = 5
    """Passes over the rollout per iteration."""
    num_mini_batches: int = 4
    """Minibatches per pass; each holds steps * num_envs / num_mini_batches transitions."""
    clip_param: float = 0.2
    """PPO ratio clip (and value clip) range."""
    gamma: float = 0.99
    """Discount factor."""
    lam: float = 0.95
    """GAE lambda."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    entropy_coef: float = 0.005
    """Weight of the entropy bonus."""
    use_clipped_value_loss: bool = True
    """Clip the value update like the policy update."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip."""
    normalize_advantages: bool = True
    """Normalize advantages per minibatch."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`algo.FIELD`), its value and what is allowed."""
        check_positive("algo.learning_rate", self.learning_rate)
        if self.schedule not in ("adaptive", "fixed"):
            raise ConfigError(f"got {self.schedule!r}; allowed: 'adaptive', 'fixed'", "algo.schedule")
        check_positive("algo.desired_kl", self.desired_kl)
        check_int("algo.num_learning_epochs", self.num_learning_epochs)
        check_int("algo.num_mini_batches", self.num_mini_batches)
        check_positive("algo.clip_param", self.clip_param)
        check_range("algo.gamma", self.gamma, 0.0, 1.0)
        check_range("algo.lam", self.lam, 0.0, 1.0)
        check_range("algo.value_loss_coef", self.value_loss_coef, low=0.0)
        check_range("algo.entropy_coef", self.entropy_coef)
        check_positive("algo.max_grad_norm", self.max_grad_norm)


ALGORITHMS = {"ppo": PPOCfg, "td3": TD3Cfg, "sac": SACCfg}
"""`phalanx train --algo NAME`: each algorithm's settings, the `--algo.*` flags."""


@dataclass
class DistillCfg:
    """Teacher-student distillation (with `--teacher`): the student acts, and learns the teacher's
    actions on the states it visits (DAgger), then PPO fine-tunes it."""

    iterations: int = 100
    """Iterations in which the student imitates the teacher: its loss is the imitation loss and
    the critic's value loss, at a fixed learning rate. PPO fine-tunes it after them, up to
    `max_iterations` (with as many, none)."""
    coef: float = 1.0
    """Weight of the imitation loss: the mean squared difference between the student's mean
    action and the teacher's (as its env applies it: clamped to `env.actions.clip`, widened by
    `target_margin`), over the rollout's states."""
    target_margin: float = 0.0
    """How far past `env.actions.clip` the teacher's mean stays in the imitation target, in the
    teacher's standard deviations (per action). The student explores with that deviation: where
    the teacher's mean lies far past the clip its noisy action stays clipped, and a student that
    learned the clip itself would be clipped only half the time. About 3 keeps the teacher's
    behaviour under its noise; 0: the clip."""
    teacher_mix: float = 0.5
    """DAgger's beta at the first iteration: the share of env steps that take the teacher's action
    instead of the student's, so that early rollouts stay near the teacher's states. It falls
    linearly to 0 at `mix_iterations`."""
    mix_iterations: int = 20
    """The iteration from which every step takes the student's action; at most `iterations`, so
    that PPO learns only from the student's own actions."""
    fine_tune_coef: float = 0.0
    """Weight of the imitation loss kept beside PPO's while fine-tuning (0: PPO alone)."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`distill.FIELD`)."""
        check_int("distill.iterations", self.iterations)
        check_positive("distill.coef", self.coef)
        check_range("distill.teacher_mix", self.teacher_mix, 0.0, 1.0)
        check_int("distill.mix_iterations", self.mix_iterations)
        if self.mix_iterations > self.iterations:
            raise ConfigError(
                f"got {self.mix_iterations}; at most distill.iterations ({self.iterations}): PPO must not learn "
                "from the teacher's actions",
                "distill.mix_iterations",
            )
        check_range("distill.fine_tune_coef", self.fine_tune_coef, low=0.0)
        check_range("distill.target_margin", self.target_margin, low=0.0)

    def teacher_share(self, iteration: int) -> float:
        """DAgger's beta at `iteration`."""
        return self.teacher_mix * max(0.0, 1.0 - iteration / self.mix_iterations)


@dataclass
class PolicyCfg:
    """Actor-critic network."""

    actor_hidden_dims: tuple[int, ...] = (256, 128, 64)
    """Hidden layer widths of the actor MLP."""
    critic_hidden_dims: tuple[int, ...] = (256, 128, 64)
    """Hidden layer widths of the critic MLP."""
    activation: str = "elu"
    """Activation between layers: elu, relu, tanh, selu or silu."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian policy."""
    image_group: str | None = None
    """An observation group of images (num_envs, H, W, C) that the actor and critic also see,
    through convolutions (`cnn_*`) whose features join the vector observations; None: vectors only."""
    cnn_channels: tuple[int, ...] = (32, 64, 64)
    """Output channels of each convolution (with `image_group`)."""
    cnn_kernel_sizes: tuple[int, ...] = (8, 4, 3)
    """Kernel size of each convolution."""
    cnn_strides: tuple[int, ...] = (4, 2, 1)
    """Stride of each convolution."""
    cnn_features: int = 256
    """Width of the linear layer after the convolutions: the image's features."""
    shared_encoder: bool = True
    """One image encoder that the actor's and the critic's losses both train; off: one each."""
    critic_image: bool = True
    """The critic sees the image group too; off: only its vector group (with a privileged "critic"
    group that holds the state, enough to judge it, and the update trains one encoder less)."""
    image_targets: str | None = None
    """A vector observation group the actor's image encoder learns to predict from the images (a
    supervised loss beside PPO's, e.g. an object's keypoints): the actor then reads the prediction
    instead of the image features, detached, so the encoder learns from that loss alone."""
    image_target_coef: float = 1.0
    """Weight of the image-target loss (mean squared error) in the update's loss."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`policy.FIELD`), its value and what is allowed."""
        for name in ("actor_hidden_dims", "critic_hidden_dims", "cnn_channels", "cnn_kernel_sizes", "cnn_strides"):
            for width in getattr(self, name):
                check_int(f"policy.{name}", width)
        check_int("policy.cnn_features", self.cnn_features)
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"got {self.activation!r}; allowed: {', '.join(ACTIVATIONS)}", "policy.activation")
        check_positive("policy.init_noise_std", self.init_noise_std)
        check_positive("policy.image_target_coef", self.image_target_coef)
        if self.image_targets is not None and self.image_group is None:
            raise ConfigError(
                f"{self.image_targets!r} are predicted from images: set policy.image_group too", "policy.image_targets"
            )
