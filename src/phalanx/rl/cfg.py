"""The learner's configuration: PPO's hyperparameters and the policy's networks (a task's defaults
are part of its `TrainCfg`, in `phalanx.training.cfg`)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.errors import ConfigError, check_int, check_positive, check_range
from phalanx.rl.models import ACTIVATIONS


@dataclass
class PPOCfg:
    """PPO hyperparameters."""

    learning_rate: float = 1e-3
    """Initial Adam learning rate."""
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


@dataclass
class TD3Cfg:
    """FastTD3 (Seo et al., 2025): TD3 over many parallel envs, with a distributional critic (C51)
    and a replay buffer on the device. Defaults: the paper's Isaac Lab configuration. An
    iteration is `num_steps_per_env` env steps of every env, each followed by
    `updates_per_step` gradient updates."""

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
    """Env steps (of every env) collected before the first update."""
    n_step: int = 1
    """Steps of reward summed before bootstrapping (an episode's end stops the sum)."""
    gamma: float = 0.99
    """Discount factor."""
    tau: float = 0.1
    """Target critics move this share of the way to the critics after each update."""
    policy_delay: int = 2
    """The actor updates once per this many critic updates."""
    policy_noise: float = 0.001
    """Standard deviation of the noise added to the target action (target policy smoothing)."""
    noise_clip: float = 0.5
    """The target action's noise is clipped to +- this."""
    std_min: float = 0.001
    """Each env explores with Gaussian noise of a standard deviation drawn from [std_min, std_max]
    when its episode starts."""
    std_max: float = 0.4
    """See `std_min`."""
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

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`algo.FIELD`), its value and what is allowed."""
        for name in ("actor_learning_rate", "critic_learning_rate", "tau", "action_bound", "init_scale"):
            check_positive(f"algo.{name}", getattr(self, name))
        check_range("algo.tau", self.tau, 0.0, 1.0)
        check_range("algo.weight_decay", self.weight_decay, low=0.0)
        for name in ("buffer_size", "batch_size", "updates_per_step", "n_step", "policy_delay"):
            check_int(f"algo.{name}", getattr(self, name))
        check_int("algo.learning_starts", self.learning_starts, minimum=0)
        if self.n_step > self.buffer_size:
            raise ConfigError(f"got {self.n_step}; at most algo.buffer_size ({self.buffer_size})", "algo.n_step")
        check_range("algo.gamma", self.gamma, 0.0, 1.0)
        check_range("algo.policy_noise", self.policy_noise, low=0.0)
        check_range("algo.noise_clip", self.noise_clip, low=0.0)
        check_range("algo.std_min", self.std_min, low=0.0)
        if self.std_max < self.std_min:
            raise ConfigError(f"got {self.std_max}; at least algo.std_min ({self.std_min})", "algo.std_max")
        check_int("algo.num_atoms", self.num_atoms, minimum=2)
        if not self.v_max > self.v_min:
            raise ConfigError(f"got {self.v_max}; more than algo.v_min ({self.v_min})", "algo.v_max")
        for name in ("actor_hidden_dims", "critic_hidden_dims"):
            for width in getattr(self, name):
                check_int(f"algo.{name}", width)
        check_range("algo.max_grad_norm", self.max_grad_norm, low=0.0)


ALGORITHMS = {"ppo": PPOCfg, "td3": TD3Cfg}
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
    action and the teacher's (as its env applies it: clamped to `env.actions.clip`), over the
    rollout's states."""
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
