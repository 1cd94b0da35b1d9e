"""What a policy sees through the tiled camera: RGB, depth and segmentation of a few envs of a
task, one row per env, as one PNG (all envs rendered in one call, after a few random steps).

python tools/camera_grid.py --task cartpole-rgb --camera eye --size 64 --envs 4 --out docs/media/cartpole-rgb-camera.png
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import matplotlib
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)

import phalanx  # noqa: E402
from phalanx.sensors import TiledCamera  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="cartpole-rgb")
    parser.add_argument("--camera", default="eye")
    parser.add_argument("--size", type=int, default=64, help="width and height in pixels")
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20, help="random-action steps before the picture")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, default=Path("docs/media/cartpole-rgb-camera.png"))
    args = parser.parse_args()
    env = phalanx.make(args.task, num_envs=args.envs, device=args.device, verbose=False)
    generator = torch.Generator(device=env.device).manual_seed(0)
    for _ in range(args.steps):
        env.step(torch.rand(env.num_envs, env.action_dim, device=env.device, generator=generator) * 2 - 1)
    camera = TiledCamera(env.sim, args.camera, args.size, args.size, ("rgb", "depth", "segmentation"))
    images = {name: value.cpu() for name, value in camera().items()}
    figure, axes = plt.subplots(args.envs, 3, figsize=(6, 2 * args.envs), squeeze=False)
    depth = images["depth"][..., 0]
    far = float(depth.max())
    for env_id, row in enumerate(axes):
        row[0].imshow(images["rgb"][env_id].numpy(), interpolation="nearest")
        row[1].imshow(depth[env_id].numpy(), cmap="viridis", vmin=0.0, vmax=far, interpolation="nearest")
        row[2].imshow(images["segmentation"][env_id, ..., 0].numpy(), cmap="tab20", interpolation="nearest")
        for ax, title in zip(row, ("RGB", f"depth (0-{far:.1f} m)", "segmentation (geom)"), strict=True):
            ax.set_xticks([])
            ax.set_yticks([])
            if env_id == 0:
                ax.set_title(title, fontsize=9)
        row[0].set_ylabel(f"env {env_id}", fontsize=9)
    figure.suptitle(f"{args.task}: camera '{args.camera}', {args.size}x{args.size}, {args.envs} envs", fontsize=10)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial.png")
    figure.savefig(partial, dpi=100)
    os.replace(partial, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
