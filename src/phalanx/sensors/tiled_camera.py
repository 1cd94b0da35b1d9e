"""Tiled camera: one camera of the model rendered in every env by one call of MuJoCo Warp's
ray-traced batch renderer, read as (num_envs, H, W, C) torch tensors on the sim's device.

The render context (the scene's BVH, the camera's rays, the image buffers) is built once; each
call refits the BVH to the current poses and renders, in order with torch's stream, so it can run
inside the captured env step, also only when a flag on the device says so (a conditional node in
the CUDA graph). Depth and segmentation are views of the renderer's buffers; RGB is one conversion
from its packed pixels."""

from __future__ import annotations

import re

import mujoco
import mujoco_warp as mjw
import torch
import warp as wp

from phalanx.sim import Simulator

DATA_TYPES = ("rgb", "depth", "segmentation")


class TiledCamera:
    """The model's camera `camera` at `width` x `height` pixels, rendering the geoms of `groups`.
    `__call__` renders every env and returns the `data_types` asked for:
    - "rgb": (num_envs, H, W, 3) uint8;
    - "depth": (num_envs, H, W, 1) float32, metres along the optical axis (planar), 0 for no hit;
    - "segmentation": (num_envs, H, W, 1) int32, the geom each pixel sees (-1: none), or with `classes`
      (name -> regex of geom names, in order) k + 1 for the first class k fully matching its name.

    `far` (m, along the optical axis) hides what lies beyond it; None: the model's `<map zfar>` times
    its extent. Each render first poses the geoms, cameras and lights for the current joint positions
    (in a data of its own, the sim's untouched), so the camera sees the state the observations read."""

    def __init__(
        self,
        sim: Simulator,
        camera: str,
        width: int = 64,
        height: int = 64,
        data_types: tuple[str, ...] = ("rgb",),
        groups: tuple[int, ...] = (0, 1, 2),
        classes: dict[str, str] | None = None,
        far: float | None = None,
    ):
        for name, value in (("width", width), ("height", height)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"camera {name} must be a positive number of pixels, got {value!r}")
        if far is not None and not (isinstance(far, int | float) and 0 < far < float("inf")):
            raise ValueError(f"camera far must be a finite distance > 0 in metres (or None), got {far!r}")
        unknown = [t for t in data_types if t not in DATA_TYPES]
        if unknown or not data_types:
            raise ValueError(f"camera data_types {list(data_types)}: allowed are one or more of {DATA_TYPES}")
        names = [mujoco.mj_id2name(sim.mjm, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(sim.mjm.ncam)]
        if camera not in names:
            raise ValueError(f"no camera named {camera!r}; the model has {names}")
        self.sim, self.data_types = sim, tuple(data_types)
        self._class_of = None if classes is None else _class_table(sim, classes)  # (ngeom + 1,): geom id + 1 -> class
        n = sim.num_envs
        view = sim.mjm.vis.map
        model_far = view.zfar
        if far is not None:  # the renderer reads it once, relative to the model's extent
            view.zfar = far / sim.mjm.stat.extent
        try:
            with wp.ScopedDevice(sim.wp_device):
                self.context = mjw.create_render_context(
                    sim.mjm,
                    nworld=n,
                    cam_res=(width, height),
                    render_rgb="rgb" in data_types,
                    render_depth="depth" in data_types,
                    render_seg="segmentation" in data_types,
                    use_textures=False,
                    enabled_geom_groups=list(groups),
                    cam_active=[camera],
                )
        finally:
            view.zfar = model_far
        shape, t = (n, height, width), wp.to_torch
        self._views = {}  # the renderer's buffers, seen as images
        if "rgb" in data_types:  # packed 0xAARRGGBB: bytes b, g, r, a in memory
            self._views["rgb"] = t(self.context.rgb_data).view(torch.uint8).view(*shape, 4)
        if "depth" in data_types:
            self._views["depth"] = t(self.context.depth_data).view(*shape, 1)
        if "segmentation" in data_types:  # (object id, object type) per pixel
            self._views["segmentation"] = t(self.context.seg_data).view(*shape, 2)[..., :1]
        with wp.ScopedDevice(sim.wp_device):  # posed for the render only: no contacts or constraints
            self._posed = mjw.make_data(sim.mjm, nworld=n, nconmax=1, njmax=1)
        com_modes = (mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM, mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODYCOM)
        self._needs_com = any(mode in com_modes for mode in (*sim.mjm.cam_mode, *sim.mjm.light_mode))
        self._due = torch.ones(1, dtype=torch.int32, device=sim.device)  # render when nonzero (`__call__`)
        self._due_flag = wp.from_torch(self._due)
        sim.add_step_work(self._render)  # its kernels compile with the physics step's

    def __call__(self, due: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Renders every env and returns the images. With `due`, a bool or integer scalar on the
        device, it renders only when that is true (nonzero), decided on the device: otherwise the
        images of the last render stay. Inside a CUDA graph that is a conditional node, no host
        sync; run eagerly on a GPU it reads the flag back (one sync per call)."""
        if due is None:
            self.sim.launch(self._render)
        else:
            self._due.copy_(due.reshape(1))
            self.sim.launch(self._render_if_due)
        images = dict(self._views)
        if "rgb" in images:
            images["rgb"] = images["rgb"][..., :3].flip(-1)
        if "segmentation" in images and self._class_of is not None:
            images["segmentation"] = self._class_of[images["segmentation"].long() + 1]
        return images

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The last render's images as the renderer keeps them (what `__call__` returns until the
        next render)."""
        return {name: view.clone() for name, view in self._views.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for name, view in self._views.items():
            view.copy_(state[name])

    def _render_if_due(self) -> None:
        wp.capture_if(self._due_flag, on_true=self._render)  # looked up at the call: see warp_compile

    def _render(self) -> None:
        m, posed, data = self.sim.model, self._posed, self.sim.data
        wp.copy(posed.qpos, data.qpos)
        if self.sim.mjm.nmocap:
            wp.copy(posed.mocap_pos, data.mocap_pos)
            wp.copy(posed.mocap_quat, data.mocap_quat)
        mjw.kinematics(m, posed)
        if self.sim.mjm.nflex:  # flex vertices: rendered where their bodies now are
            mjw.flex(m, posed)
        if self._needs_com:
            mjw.com_pos(m, posed)
        mjw.camlight(m, posed)
        mjw.refit_bvh(m, posed, self.context)
        mjw.render(m, posed, self.context)


def _class_table(sim: Simulator, classes: dict[str, str]) -> torch.Tensor:
    """(ngeom + 1,) int32 class of each geom id + 1 (index 0: no geom), for `classes` in order."""
    names = sim.geom_names
    table = torch.zeros(len(names) + 1, dtype=torch.int32)
    for k, (label, pattern) in enumerate(classes.items()):
        matched = [g for g, name in enumerate(names) if re.fullmatch(pattern, name) and table[g + 1] == 0]
        if not matched:
            left = f"matches no geom an earlier class left; the model has {names}"
            raise ValueError(f"camera class {label!r}: {pattern!r} {left}")
        table[[g + 1 for g in matched]] = k + 1
    return table.to(sim.device)
