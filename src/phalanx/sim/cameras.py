"""Cameras from config: `CameraCfg`s add cameras to a model through `mujoco.MjSpec` before it
compiles, fixed in the world or riding on a body, for `observations.camera_image` and
`phalanx.sensors.TiledCamera` (which read them by name).

`CameraCfg` is plain data; `add_cameras` loads MuJoCo on first use, so configs import fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.core.errors import ConfigError, check_range

if TYPE_CHECKING:
    import mujoco

MODES = ("fixed", "track", "trackcom")
"""MuJoCo's camera modes without a target body: moving and turning with its body, following its
body's position at a fixed orientation, or following the subtree's centre of mass."""


@dataclass
class CameraCfg:
    """A camera looking along its -z axis, its image's up along its y axis (MuJoCo's convention)."""

    body: str = "world"
    """The body it rides on; "world": fixed in the world."""
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Position in the body's frame (m)."""
    xyaxes: tuple[float, float, float, float, float, float] = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    """The camera's x axis (image right) and y axis (image up) in the body's frame, as MuJoCo's
    `xyaxes` (orthogonalized when the model compiles). The default looks straight down -z."""
    fovy: float = 45.0
    """Vertical field of view in degrees."""
    mode: str = "fixed"
    """How it follows its body: one of `MODES`."""

    def check(self, field: str = "cameras.NAME") -> None:
        """Raises ConfigError naming the first invalid field (`FIELD.NAME`), its value and what is allowed."""
        check_range(f"{field}.fovy", self.fovy, low=1e-3, high=179.0)
        if self.mode not in MODES:
            raise ConfigError(f"must be one of {list(MODES)}, got {self.mode!r}", f"{field}.mode")
        if len(self.pos) != 3 or not all(math.isfinite(v) for v in self.pos):
            raise ConfigError(f"expected 3 finite numbers, got {self.pos!r}", f"{field}.pos")
        axes = tuple(self.xyaxes)
        finite = len(axes) == 6 and all(math.isfinite(v) for v in axes)
        x, y = (axes[:3], axes[3:]) if finite else ((0.0,) * 3, (0.0,) * 3)
        cross = (x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0])
        if math.hypot(*cross) < 1e-6:
            raise ConfigError(
                f"expected two non-parallel axes (6 finite numbers), got {self.xyaxes!r}", f"{field}.xyaxes"
            )


def add_cameras(spec: mujoco.MjSpec, cameras: dict[str, CameraCfg], field: str = "cameras") -> None:
    """Adds each camera, named by its key, to `spec` in place. Errors name `FIELD.NAME.body` (a
    body the model lacks, with its bodies) or `FIELD.NAME` (a camera the model already has)."""
    import mujoco

    have = {camera.name for camera in spec.cameras}
    bodies = [body.name for body in spec.bodies]
    for name, cfg in cameras.items():
        cfg.check(f"{field}.{name}")
        if name in have:
            raise ConfigError(f"the model already has a camera named {name!r}", f"{field}.{name}")
        if cfg.body != "world" and cfg.body not in bodies:
            raise ConfigError(f"no body {cfg.body!r}; the model has {bodies}", f"{field}.{name}.body")
    for name, cfg in cameras.items():
        parent = spec.worldbody if cfg.body == "world" else spec.body(cfg.body)
        camera = parent.add_camera(name=name, pos=list(cfg.pos), fovy=cfg.fovy)
        camera.mode = getattr(mujoco.mjtCamLight, f"mjCAMLIGHT_{cfg.mode.upper()}")
        camera.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
        camera.alt.xyaxes = list(cfg.xyaxes)
