"""A policy that sees images: the convolutional encoder, the actor-critic around it, images
stored as they come (uint8) in the rollout, and training and play that read them."""

from __future__ import annotations

import pytest
import torch
from rich.console import Console

import phalanx
from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs import ObsTermCfg
from phalanx.envs.mdp import observations
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.image_encoder import ImageEncoder
from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import PPO, PPOCfg
from phalanx.training.play import load_actor
from phalanx.training.trainer import Trainer

SMALL_CNN = {"cnn_channels": (8, 16), "cnn_kernel_sizes": (4, 3), "cnn_strides": (2, 1), "cnn_features": 32}


def _encoder(shape: tuple[int, int, int] = (24, 32, 3), **kwargs) -> ImageEncoder:
    settings = {"channels": (8, 16), "kernel_sizes": (4, 3), "strides": (2, 1), "features": 32} | kwargs
    return ImageEncoder(shape, activation=torch.nn.ELU, **settings)


def test_uint8_images_are_scaled_to_unit_range_and_float_images_pass_as_they_are() -> None:
    encoder = _encoder()
    rgb = torch.randint(0, 256, (5, 24, 32, 3), dtype=torch.uint8)
    torch.testing.assert_close(encoder(rgb), encoder(rgb.float() / 255.0))
    assert encoder(rgb).shape == (5, 32)
    depth_encoder = _encoder((24, 32, 1))
    depth = torch.rand(5, 24, 32, 1) * 4.0
    assert not torch.allclose(depth_encoder(depth), depth_encoder(depth / 255.0))


def test_the_encoder_reads_channels_last_images_as_cudnn_runs_them() -> None:
    encoder = _encoder()
    assert encoder.convolutions[0].weight.is_contiguous(memory_format=torch.channels_last)
    image = torch.rand(2, 24, 32, 3)
    padded = torch.nn.functional.pad(image, (0, encoder.pad_channels))
    assert padded.shape[-1] == 8 and padded.permute(0, 3, 1, 2).is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("channels", [1, 3, 5, 8])
def test_padded_image_channels_give_the_unpadded_features_and_gradients(channels: int) -> None:
    """On CUDA the image's channels are zero-padded to 8 before the first convolution, whose weight
    keeps the image's channels (checkpoints load as before): the features and the weight's
    gradients are those of the unpadded image, and 8 channels are not padded at all."""
    encoder = _encoder((24, 32, channels))
    first = encoder.convolutions[0]
    assert first.weight.shape[1] == channels and (type(first) is torch.nn.Conv2d) == (channels == 8)
    assert encoder.pad_channels == 8 - channels % 8 if channels % 8 else encoder.pad_channels == 0
    images = torch.rand(4, 24, 32, channels)
    padded = torch.nn.functional.pad(images, (0, encoder.pad_channels))

    def features_and_gradient(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = encoder.head(encoder.convolutions(x.permute(0, 3, 1, 2)))
        return features, torch.autograd.grad(features.square().sum(), first.weight)[0]

    expected, expected_gradient = features_and_gradient(images)
    got, gradient = features_and_gradient(padded)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(gradient, expected_gradient)
    torch.testing.assert_close(encoder(images), expected)  # on the CPU, unpadded: padding only adds work


@pytest.mark.gpu
def test_the_encoder_on_cuda_pads_and_gives_the_cpu_features() -> None:
    """The padded CUDA path gives the CPU's unpadded features, to the precision of cuDNN's TF32
    convolutions (a 10-bit mantissa: relative error about 1e-3 per product)."""
    encoder = _encoder((24, 32, 5))
    images = torch.rand(4, 24, 32, 5)
    expected = encoder(images)
    torch.testing.assert_close(encoder.cuda()(images.cuda()).cpu(), expected, rtol=1e-2, atol=1e-3)


def test_bad_encoder_settings_name_the_field() -> None:
    with pytest.raises(ConfigError, match="policy.cnn_kernel_sizes: images of 24x32 are too small"):
        _encoder(channels=(32, 64, 64), kernel_sizes=(8, 4, 3), strides=(4, 2, 1))
    with pytest.raises(ConfigError, match="policy.cnn_channels: .* one entry per convolution"):
        _encoder(channels=(8,))


RGB = ObsTermCfg(func=observations.camera_image, params={"camera": "track", "width": 32, "height": 24})


def _cartpole_with_images(num_envs: int):
    cfg = phalanx.env_cfg("cartpole")
    cfg.observations["image"] = {"rgb": RGB}
    return make_cpu(cfg, num_envs=num_envs)


def test_the_actor_critic_names_a_missing_image_group() -> None:
    env = _cartpole_with_images(2)
    with pytest.raises(ConfigError, match="policy.image_group: 'pixels': expected an observation group of"):
        ActorCritic.for_env(env.observation_spec, env.action_dim, PolicyCfg(image_group="pixels", **SMALL_CNN))
    with pytest.raises(ConfigError, match="policy.image_group: 'policy': expected .* got shape \\(4,\\)"):
        ActorCritic.for_env(env.observation_spec, env.action_dim, PolicyCfg(image_group="policy", **SMALL_CNN))


def test_shared_and_separate_encoders_and_gradients_reach_them() -> None:
    spec = {"policy": (4,), "image": (24, 32, 3)}
    shared = ActorCritic.for_env(spec, 1, PolicyCfg(image_group="image", **SMALL_CNN))
    separate = ActorCritic.for_env(spec, 1, PolicyCfg(image_group="image", shared_encoder=False, **SMALL_CNN))
    assert shared.actor_encoder is shared.critic_encoder
    assert separate.actor_encoder is not separate.critic_encoder
    encoder_size = sum(p.numel() for p in shared.actor_encoder.parameters())
    size = {name: sum(p.numel() for p in model.parameters()) for name, model in (("s", shared), ("p", separate))}
    assert size["p"] - size["s"] == encoder_size
    obs, image = torch.randn(6, 4), torch.randint(0, 256, (6, 24, 32, 3), dtype=torch.uint8)
    calls = []
    for model in (shared, separate):
        for encoder in {model.actor_encoder, model.critic_encoder}:
            encoder.register_forward_hook(lambda *_: calls.append(1))
    dist, value = shared.distribution_and_value(obs, obs, image)
    assert len(calls) == 1, "a shared encoder encodes the image once for both heads"
    torch.testing.assert_close(value, shared.value(obs, image))
    torch.testing.assert_close(dist.mean, shared.act_deterministic(obs, image))
    calls.clear()
    separate.distribution_and_value(obs, obs, image)
    assert len(calls) == 2
    separate.value(obs, image).sum().backward()
    assert separate.critic_encoder.head[0].weight.grad.abs().sum() > 0
    assert separate.actor_encoder.head[0].weight.grad is None  # the value trains only the critic's


def test_the_trainer_learns_from_images_it_stores_as_uint8() -> None:
    env = _cartpole_with_images(8)
    cfg = phalanx.train_cfg("cartpole")
    cfg.num_steps_per_env = 4
    cfg.policy = PolicyCfg(image_group="image", **SMALL_CNN)
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    assert set(trainer._obs_in) == {"policy", "image"}
    images = trainer.ppo.storage.images
    assert images.dtype == torch.uint8 and images.shape == (4, 8, 24, 32, 3)
    before = trainer.policy.actor_encoder.head[0].weight.clone()
    rows = [trainer.iterate() for _ in range(2)]
    assert images.float().std() > 0, "the rollout's images were stored"
    assert torch.isfinite(torch.tensor([rows[-1][f"loss/{name}"] for name in ("surrogate", "value")])).all()
    assert not torch.equal(before, trainer.policy.actor_encoder.head[0].weight), "the update trained the encoder"

    state = {
        "config": {"policy": vars(cfg.policy), "empirical_normalization": False},
        "policy": trainer.policy.state_dict(),
        "obs_norm": trainer.ppo.obs_norm.state_dict(),
    }
    act = load_actor(state, env)
    obs = env.reset()
    with torch.no_grad():
        expected = trainer.policy.act_deterministic(obs["policy"], obs["image"])
    torch.testing.assert_close(act(obs), expected)


def test_image_targets_train_the_encoder_alone_and_the_actor_reads_the_prediction() -> None:
    spec = {"policy": (4,), "image": (24, 32, 3), "targets": (6,)}
    cfg = PolicyCfg(image_group="image", image_targets="targets", critic_image=False, **SMALL_CNN)
    model = ActorCritic.for_env(spec, 2, cfg)
    assert model.actor[0].in_features == 4 + 6, "the actor reads the 6 predicted values, not the 32 features"
    obs, image = torch.randn(5, 4), torch.randint(0, 256, (5, 24, 32, 3), dtype=torch.uint8)
    dist, _, predicted = model.distribution_and_value(obs, obs, image, predict=True)
    assert predicted.shape == (5, 6)
    torch.testing.assert_close(dist.mean, model.act_deterministic(obs, image))
    dist.mean.sum().backward()
    assert model.actor[0].weight.grad.abs().sum() > 0
    assert model.actor_encoder.head[0].weight.grad is None, "the policy's loss does not reach the encoder"
    model.zero_grad(set_to_none=True)
    predicted.square().sum().backward()
    assert model.target_head.weight.grad.abs().sum() > 0 and model.actor_encoder.head[0].weight.grad.abs().sum() > 0
    assert model.actor[0].weight.grad is None


def test_bad_image_targets_name_the_field() -> None:
    with pytest.raises(ConfigError, match="policy.image_targets: 'keypoints' are predicted from images: set"):
        PolicyCfg(image_targets="keypoints").check()
    spec = {"policy": (4,), "image": (24, 32, 3)}
    with pytest.raises(ConfigError, match="policy.image_targets: 'kp': expected a vector observation group, got no"):
        ActorCritic.for_env(spec, 1, PolicyCfg(image_group="image", image_targets="kp", **SMALL_CNN))


def test_the_update_learns_to_predict_image_targets() -> None:
    """A rollout whose targets are each image's brightness: repeated updates on it drive the
    image-target loss (logged as loss/image_targets) far below where it starts."""
    spec = {"policy": (4,), "image": (24, 32, 3), "targets": (3,)}
    torch.manual_seed(0)
    policy = ActorCritic.for_env(spec, 2, PolicyCfg(image_group="image", image_targets="targets", **SMALL_CNN))
    generator = torch.Generator().manual_seed(0)
    ppo = PPO(policy, PPOCfg(), spec, 16, 4, False, generator, image_group="image", image_targets="targets")
    storage = ppo.storage
    brightness = torch.rand(4, 16, 1, 1, 1)
    storage.images.copy_((torch.rand(4, 16, 24, 32, 3) * brightness * 255).to(torch.uint8))
    storage.image_targets.copy_(storage.images.float().mean(dim=(2, 3)) / 255.0)
    storage.action_std.fill_(1.0)
    storage.advantages.copy_(torch.randn(4, 16))
    losses = [ppo.update()["loss/image_targets"].item() for _ in range(20)]
    assert losses[-1] < 0.2 * losses[0], losses
