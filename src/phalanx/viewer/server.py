"""The page `phalanx view` serves, through viser: the shown envs' geoms in 3D, controls (pause,
step, reset, how many envs, follow), the sim time, curves of reward and the task's metrics, and
the images a pixel policy sees."""

from __future__ import annotations

import contextlib
import io
import threading
from collections import deque

import mujoco
import numpy as np

from phalanx.viewer.meshes import geom_meshes, marker_mesh
from phalanx.viewer.poses import EnvPoses, arrow_quats

FRAME_S = 1.0 / 30.0
"""Seconds between two updates of the page's scene: about 30 frames/s."""
MAX_SHOWN = 64
"""Envs the page can show at most (their poses are computed on the host)."""
CURVE_POINTS = 600
"""Points each curve keeps (the newest)."""
HIDDEN = (0.0, 0.0, -1e4)
"""Where the geoms of envs not shown go."""
MAX_ARROWS = 256
"""Contact force arrows the page draws at most (the largest forces)."""


class Viewer:
    """A viser server showing the K envs of model `mjm` whose joint positions `start_qpos` (K, nq)
    gives, `shown` of them at first; with `steps`, the loop that steps the envs reads `paused`,
    `take_step()` and `take_reset()`; it calls `show`, `markers`, `record` and `draw_curves`."""

    def __init__(
        self,
        mjm: mujoco.MjModel,
        title: str,
        start_qpos: np.ndarray,
        host: str,
        port: int,
        shown: int,
        steps: bool = True,
        x_label: str = "sim time (s)",
        contacts: bool = False,
    ):
        import logging

        import viser

        # A browser that drops its connection (a closed tab, a reload mid-handshake) is no error here.
        logging.getLogger("websockets").setLevel(logging.CRITICAL)
        self.mjm = mjm
        with _quiet():  # viser prints its own banner; `phalanx view` says where the page is
            self.server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.port = self.server.get_port()
        meshes = geom_meshes(mjm)
        self.poses = EnvPoses(mjm, [m.geom for m in meshes], start_qpos)
        self.count = len(start_qpos)
        on_grid = bool(np.any(self.poses.offsets))
        self.handles = []
        scene = self.server.scene
        for m in meshes:
            copies = self.count if (on_grid and not m.plane) or not m.static else 1  # a world geom per env on a grid
            self.handles.append(
                scene.add_batched_meshes_simple(
                    f"/envs/{m.geom}_{m.name}",
                    m.vertices,
                    m.faces,
                    batched_wxyzs=np.tile([1.0, 0.0, 0.0, 0.0], (copies, 1)).astype(np.float32),
                    batched_positions=np.zeros((copies, 3), np.float32),
                    batched_colors=np.tile(np.array(m.color, np.uint8), (copies, 1)),
                    lod="off",
                )
            )
        self._lock = threading.Lock()
        self._step_asked = self._reset_asked = False
        gui = self.server.gui
        gui.add_markdown(f"**{title}**")
        self.time_text = gui.add_text("sim time", "0.000 s", disabled=True)
        self.pause_box = gui.add_checkbox("pause", False)
        if steps:  # the viewer steps the envs itself (not while training)
            step, reset = gui.add_button("step"), gui.add_button("reset")
            step.on_click(lambda _: self._ask("_step_asked"))
            reset.on_click(lambda _: self._ask("_reset_asked"))
        self.x_label = x_label
        self.shown_slider = gui.add_slider("envs shown", 1, self.count, 1, min(shown, self.count))
        self.follow_box = gui.add_checkbox("follow", False)
        self.follow_env = gui.add_number(
            "follow env", 0, min=0, max=self.count - 1, step=1, hint="one of the shown envs"
        )
        self.contacts_box = gui.add_checkbox("contact forces", False) if contacts else None
        self.force_scale = gui.add_slider("force arrow scale", 0.1, 10.0, 0.1, 1.0) if contacts else None
        self._arrows = None
        self._aim_camera(start_qpos[:shown])
        self._curves: dict[str, tuple[deque, deque, object]] = {}
        self._image = None
        self._markers: dict[str, object] = {}

    def _aim_camera(self, qpos: np.ndarray) -> None:
        """The camera a page opens with: at the shown envs' middle, from the front and above, far
        enough back to see them all."""
        k = len(qpos)
        positions, _ = self.poses(
            qpos, np.zeros((k, self.mjm.nmocap, 3)), np.tile([1.0, 0, 0, 0], (k, self.mjm.nmocap, 1))
        )
        moving = [j for j, handle in enumerate(self.handles) if len(handle.batched_positions) == self.count]
        points = positions[:, moving].reshape(-1, 3) if moving else positions.reshape(-1, 3)
        center = points.mean(axis=0)
        reach = max(float(np.ptp(points, axis=0).max()), 1.0)
        self.server.scene.set_up_direction("+z")
        self.server.initial_camera.look_at = tuple(center)
        self.server.initial_camera.position = tuple(center + reach * np.array([0.0, -1.2, 0.6]))

    def _ask(self, flag: str) -> None:
        with self._lock:
            setattr(self, flag, True)

    @property
    def paused(self) -> bool:
        return bool(self.pause_box.value)

    def take_step(self) -> bool:
        """Whether a single step was asked for since the last call (pause's step button)."""
        with self._lock:
            asked, self._step_asked = self._step_asked, False
        return asked

    def take_reset(self) -> bool:
        """Whether a reset was asked for since the last call."""
        with self._lock:
            asked, self._reset_asked = self._reset_asked, False
        return asked

    def show(self, sim_time: float, qpos: np.ndarray, mocap_pos: np.ndarray, mocap_quat: np.ndarray) -> None:
        """Poses the geoms of the shown envs (the first `envs shown` of the K rows given) and hides the rest."""
        shown = int(self.shown_slider.value)
        positions, quats = self.poses(qpos[:shown], mocap_pos[:shown], mocap_quat[:shown])
        with self.server.atomic():
            for j, handle in enumerate(self.handles):
                copies = len(handle.batched_positions)
                if copies == 1:  # static, drawn once (where the middle env has it)
                    middle = shown // 2
                    here = slice(middle, middle + 1)
                    handle.batched_positions, handle.batched_wxyzs = positions[here, j], quats[here, j]
                    continue
                pos = np.full((copies, 3), HIDDEN, np.float32)  # envs not shown: out of sight
                pos[:shown] = positions[:, j]
                wxyz = np.tile(np.float32([1, 0, 0, 0]), (copies, 1))
                wxyz[:shown] = quats[:, j]
                handle.batched_positions, handle.batched_wxyzs = pos, wxyz
            self.time_text.value = f"{sim_time:.3f} s"
        if self.follow_box.value and self.mjm.nbody > 1:
            self._follow(positions[self.followed(shown)].mean(axis=0))

    def followed(self, shown: int) -> int:
        """The env the camera follows: the page's "follow env", or the last shown one if it is past them."""
        return min(max(int(self.follow_env.value), 0), shown - 1)

    def markers(self, markers: dict[str, tuple[str, np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int]]]) -> None:
        """Poses each marker (shape, (K, 3) positions, (K, 4) orientations, (K, 3) scales, color) at
        the shown envs, each shifted by its env's place in the view; drawn the first time."""
        shown = int(self.shown_slider.value)
        with self.server.atomic():
            for name, (shape, pos, quat, scale, color) in markers.items():
                handle = self._markers.get(name) or self._add_marker(name, shape, len(pos), color)
                pos = pos + self.poses.offsets[: len(pos)]
                pos[shown:] = HIDDEN
                handle.batched_positions, handle.batched_wxyzs = pos.astype(np.float32), quat.astype(np.float32)
                handle.batched_scales = scale.astype(np.float32)

    def contact_forces(self, points: np.ndarray, forces: np.ndarray, envs: np.ndarray, weight: float) -> None:
        """Draws each force (M, 3) as an arrow from its contact point (M, 3) of env `envs` (M,); a
        force of `weight` newtons is half the model's extent long (times the page's scale). None
        given: the arrows are hidden."""
        if self._arrows is None and not len(points):
            return
        if self._arrows is None:
            self._arrows = self._add_marker("contact forces", "arrow", MAX_ARROWS, (230, 60, 60))
        extent = float(self.mjm.stat.extent)
        shown = envs < int(self.shown_slider.value)
        points, forces, envs = points[shown], forces[shown], envs[shown]
        pos = np.tile(np.float32(HIDDEN), (MAX_ARROWS, 1))
        wxyz = np.tile(np.float32([1, 0, 0, 0]), (MAX_ARROWS, 1))
        scale = np.full((MAX_ARROWS, 3), 1e-3, np.float32)
        m = len(points)
        pos[:m] = points + self.poses.offsets[envs]
        wxyz[:m] = arrow_quats(forces)
        scale[:m, 0] = 0.5 * extent * self.force_scale.value * np.linalg.norm(forces, axis=1) / weight
        scale[:m, 1:] = 0.015 * extent
        with self.server.atomic():
            self._arrows.batched_positions, self._arrows.batched_wxyzs, self._arrows.batched_scales = pos, wxyz, scale

    def _add_marker(self, name: str, shape: str, count: int, color: tuple[int, int, int]):
        scene, one = self.server.scene, np.tile(np.float32([1, 0, 0, 0]), (count, 1))
        at = np.zeros((count, 3), np.float32)
        if shape == "axes":
            handle = scene.add_batched_axes(f"/markers/{name}", one, at, axes_length=1.0, axes_radius=0.06)
        else:
            vertices, faces = marker_mesh(shape)
            colors = np.tile(np.array(color, np.uint8), (count, 1))
            handle = scene.add_batched_meshes_simple(
                f"/markers/{name}", vertices, faces, one, at, batched_colors=colors, lod="off", cast_shadow=False
            )
        self._markers[name] = handle
        return handle

    def _follow(self, target: np.ndarray) -> None:
        """Moves every client's camera with `target` (the followed env's middle), keeping its offset."""
        for client in self.server.get_clients().values():
            camera = client.camera
            shift = target - np.asarray(camera.look_at)
            with client.atomic():
                camera.position = np.asarray(camera.position) + shift
                camera.look_at = target

    def record(self, name: str, x: float, value: float) -> None:
        """Appends (x, value) to the curve `name`, drawing it the first time."""
        if name not in self._curves:
            from viser import uplot

            xs, ys = deque(maxlen=CURVE_POINTS), deque(maxlen=CURVE_POINTS)
            plot = self.server.gui.add_uplot(
                data=(np.zeros(1), np.zeros(1)),
                series=(uplot.Series(label=self.x_label), uplot.Series(label=name, stroke="#1f77b4", width=2)),
                scales={"x": uplot.Scale(time=False)},
                title=name,
                aspect=2.0,
            )
            self._curves[name] = (xs, ys, plot)
        xs, ys, plot = self._curves[name]
        xs.append(x)
        ys.append(value)

    def draw_curves(self) -> None:
        """Sends the curves' newest points to the page."""
        for xs, ys, plot in self._curves.values():
            plot.data = (np.asarray(xs, np.float64), np.asarray(ys, np.float64))

    def image(self, frame: np.ndarray) -> None:
        """Shows `frame` (H, W, 3 uint8), what the policy of the first shown env sees."""
        if self._image is None:
            self._image = self.server.gui.add_image(frame, label="what env 0's policy sees", format="png")
        else:
            self._image.image = frame

    def stop(self) -> None:
        with _quiet():
            self.server.stop()


def _quiet() -> contextlib.AbstractContextManager:
    """Swallows what viser prints on its own (a banner on start, a line on stop)."""
    return contextlib.redirect_stdout(io.StringIO())
