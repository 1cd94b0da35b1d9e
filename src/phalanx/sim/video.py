"""Video of one env, rendered by MuJoCo Warp's ray-traced batch renderer (no OpenGL: headless on
CPU and GPU alike)."""

from __future__ import annotations

from pathlib import Path

import mujoco_warp as mjw
import numpy as np
import warp as wp

from phalanx.files import atomic_path
from phalanx.sim.simulator import Simulator


class EnvRecorder:
    """Renders world `env_id` of a `Simulator` through the model's first camera (the tasks name it
    "track"), frame by frame, into a 1-world copy of the model on the same device."""

    def __init__(self, sim: Simulator, env_id: int = 0, width: int = 480, height: int = 360):
        if sim.mjm.ncam == 0:
            raise ValueError("video: the model has no camera to render from")
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

    def capture(self) -> None:
        """Renders the env's current state and keeps the frame (a host copy: for play, not training)."""
        self._qpos[0].copy_(self.sim.qpos[self.env_id])
        with wp.ScopedDevice(self.sim.wp_device):
            mjw.forward(self.model, self.data)
            mjw.refit_bvh(self.model, self.data, self.context)
            mjw.render(self.model, self.data, self.context)
            mjw.get_rgb(self.context, 0, self._rgb)
        self.frames.append((self._rgb.numpy()[0].clip(0.0, 1.0) * 255).astype(np.uint8))

    def write(self, path: str | Path, fps: float) -> Path:
        """Encodes the frames as H.264 mp4, through a temp file and a rename."""
        import imageio.v3 as iio

        with atomic_path(path, suffix=".mp4") as tmp:
            iio.imwrite(tmp, np.stack(self.frames), fps=fps, codec="libx264", macro_block_size=8)
        return Path(path)
