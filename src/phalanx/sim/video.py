"""Video of one env, rendered by MuJoCo Warp's ray-traced batch renderer (no OpenGL: headless on
CPU and GPU alike)."""

from __future__ import annotations

import importlib
from pathlib import Path

import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from phalanx.core.errors import ConfigError
from phalanx.core.files import atomic_path
from phalanx.sim.simulator import Simulator


def check_video_writer(flag: str) -> None:
    """Refuses, naming `flag`, an mp4 to write where no mp4 writer is installed: imageio writes
    it, through imageio-ffmpeg's H.264 encoder (without it imageio picks another that fails after
    the rollout)."""
    for module, package in (("imageio", "imageio"), ("imageio_ffmpeg", "imageio-ffmpeg")):
        try:
            importlib.import_module(module)
        except ImportError:
            raise ConfigError(f"an .mp4 needs {package}, which is not installed: pip install {package}", flag) from None


class EnvRecorder:
    """Renders world `env_id` of a `Simulator` through the model's first camera (phalanx's tasks
    name it "track"; a model without a camera gets "view", see `add_view_camera`), frame by
    frame, into a 1-world copy of the model on the same device: the env's joints and its mocap
    bodies (markers such as a commanded pose) where the env has them."""

    def __init__(self, sim: Simulator, env_id: int = 0, width: int = 480, height: int = 360):
        if sim.mjm.ncam == 0:
            raise ConfigError("the model has no camera to render from", "video")
        if sim.mjm.ngeom == 0:  # MuJoCo Warp's renderer would crash on an empty scene
            raise ConfigError(
                "the model has no geoms to render (from a URDF MuJoCo keeps each link's <collision> geometry, "
                "not its <visual> one: give the links collision geometry)",
                "video",
            )
        self.sim, self.env_id = sim, env_id
        self.frames: list[np.ndarray] = []
        with wp.ScopedDevice(sim.wp_device):
            self.model = mjw.put_model(sim.mjm)
            self.data = mjw.make_data(sim.mjm, nworld=1)
            self.context = mjw.create_render_context(
                sim.mjm,
                nworld=1,
                cam_res=(width, height),
                render_rgb=True,
                render_depth=False,
                use_textures=False,
                use_shadows=True,
                cam_active=[0],
                background_color=(0.55, 0.65, 0.78, 1.0),
            )
            self._rgb = wp.zeros((1, height, width), dtype=wp.vec3)
        self._qpos = wp.to_torch(self.data.qpos)
        self._mocap = (wp.to_torch(self.data.mocap_pos), wp.to_torch(self.data.mocap_quat))

    def capture(self, beside: torch.Tensor | None = None, colour: bool = False) -> None:
        """Renders the env's current state and keeps the frame (a host copy: for play, not
        training); `beside`, an (H, W, C) image of that env (what its policy sees; `colour`: its
        first channels are RGB), goes to the frame's right, enlarged (`policy_view`)."""
        self._qpos[0].copy_(self.sim.qpos[self.env_id])
        self._mocap[0][0].copy_(self.sim.mocap_pos[self.env_id])
        self._mocap[1][0].copy_(self.sim.mocap_quat[self.env_id])
        with wp.ScopedDevice(self.sim.wp_device):
            mjw.forward(self.model, self.data)
            mjw.refit_bvh(self.model, self.data, self.context)
            mjw.render(self.model, self.data, self.context)
            mjw.get_rgb(self.context, 0, self._rgb)
        frame = (self._rgb.numpy()[0].clip(0.0, 1.0) * 255).astype(np.uint8)
        self.frames.append(frame if beside is None else side_by_side(frame, policy_view(beside, colour)))

    def write(self, path: str | Path, fps: float) -> Path:
        """Encodes the frames as H.264 mp4, through a temp file and a rename."""
        import imageio.v3 as iio

        with atomic_path(path, suffix=".mp4") as tmp:
            iio.imwrite(tmp, np.stack(self.frames), fps=fps, codec="libx264", macro_block_size=8)
        return Path(path)


def policy_view(image: torch.Tensor, colour: bool) -> np.ndarray:
    """An (H, W, C) observation image as RGB uint8: with `colour`, its first three channels (of
    stacked frames the newest; floats in [0, 1], as a camera's RGB stacked with other data types);
    else its first channel as gray from black (0) to white (its maximum), e.g. depth."""
    image = image.detach().cpu()
    if colour:
        rgb = image[..., :3]
        return (rgb if rgb.dtype == torch.uint8 else (rgb.float().clamp(0.0, 1.0) * 255).to(torch.uint8)).numpy()
    gray = image[..., 0].float().clamp(min=0.0)  # segmentation's -1 (nothing hit): black
    gray = (gray / gray.max().clamp(min=1e-6) * 255).to(torch.uint8)
    return gray[..., None].expand(*gray.shape, 3).numpy()


def side_by_side(frame: np.ndarray, view: np.ndarray, gap: int = 8) -> np.ndarray:
    """`view` enlarged by the largest whole factor that fits `frame`'s height, centred on the
    right of `frame`; the width padded to a multiple of 8 (the video encoder's blocks)."""
    height = frame.shape[0]
    scale = max(1, height // view.shape[0])
    view = view.repeat(scale, axis=0).repeat(scale, axis=1)[:height]
    top = (height - view.shape[0]) // 2
    width = frame.shape[1] + gap + view.shape[1]
    canvas = np.zeros((height, width + (-width) % 8, 3), dtype=np.uint8)
    canvas[:, : frame.shape[1]] = frame
    canvas[top : top + view.shape[0], frame.shape[1] + gap : width] = view
    return canvas
