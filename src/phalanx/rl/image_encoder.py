"""A convolutional encoder for image observations (num_envs, H, W, C), uint8 or float."""

from __future__ import annotations

import torch
from torch import nn

from phalanx.core.errors import ConfigError

CONV_INPUT_CHANNEL_MULTIPLE = 8
"""On CUDA, images' channels are zero-padded to a multiple of this before the first convolution:
cuDNN's tensor-core kernels read channels-last inputs of 8 channels as they are, and pad others
into a buffer of their own at every call, forward and backward. On the CPU the padding would only
add work."""


class _PaddedInputConv2d(nn.Conv2d):
    """A convolution of `in_channels` whose input may arrive with zero channels appended: its
    weight then gets zero input channels to match at each call, so its parameters (and
    checkpoints) keep the image's channels."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        appended = x.shape[1] - self.in_channels
        assert appended >= 0, f"{x.shape[1]} input channels, fewer than {self.in_channels}"
        weight = nn.functional.pad(self.weight, (0, 0, 0, 0, 0, appended)) if appended else self.weight
        return nn.functional.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ImageEncoder(nn.Module):
    """Convolutions (each followed by `activation`), then one linear layer to `features`.

    Images arrive channels-last as the camera renders them, (N, H, W, C): uint8 (RGB) becomes
    float in [0, 1] on the device, float images (depth in metres) pass as they are. On CUDA their
    channels are zero-padded to a multiple of `CONV_INPUT_CHANNEL_MULTIPLE` (one copy, with the
    conversion where there is one), and the NCHW view the convolutions read keeps the
    channels-last memory layout, which cuDNN runs natively."""

    def __init__(
        self,
        image_shape: tuple[int, int, int],
        channels: tuple[int, ...],
        kernel_sizes: tuple[int, ...],
        strides: tuple[int, ...],
        features: int,
        activation: type[nn.Module],
    ):
        super().__init__()
        if not len(channels) == len(kernel_sizes) == len(strides):
            raise ConfigError(
                f"cnn_channels {channels}, cnn_kernel_sizes {kernel_sizes} and cnn_strides {strides} "
                "must have one entry per convolution",
                "policy.cnn_channels",
            )
        height, width, depth = image_shape
        self.pad_channels = -depth % CONV_INPUT_CHANNEL_MULTIPLE
        layers: list[nn.Module] = []
        for out, kernel, stride in zip(channels, kernel_sizes, strides, strict=True):
            convolution = _PaddedInputConv2d if self.pad_channels and not layers else nn.Conv2d
            layers += [convolution(depth, out, kernel, stride), activation()]
            depth = out
        self.convolutions = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            probe = torch.zeros(1, image_shape[2], height, width)
            try:
                flat = self.convolutions(probe).shape[1]
            except RuntimeError as error:  # a kernel larger than what is left of the image
                raise ConfigError(
                    f"images of {height}x{width} are too small for convolutions with kernels {kernel_sizes} "
                    f"and strides {strides} ({str(error).splitlines()[0]})",
                    "policy.cnn_kernel_sizes",
                ) from None
        self.head = nn.Sequential(nn.Linear(flat, features), activation())
        self.features = features
        self.to(memory_format=torch.channels_last)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(N, H, W, C) images -> (N, features)."""
        x = images.float() / 255.0 if images.dtype == torch.uint8 else images.float()
        if self.pad_channels and x.is_cuda:
            x = nn.functional.pad(x, (0, self.pad_channels))
        return self.head(self.convolutions(x.permute(0, 3, 1, 2)))
