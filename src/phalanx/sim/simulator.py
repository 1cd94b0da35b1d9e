"""N worlds of one MuJoCo model stepped by MuJoCo Warp on one device, exposed to torch."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import psutil
import torch
import warp as wp

from phalanx.core.compiling import compile_boundary
from phalanx.core.errors import ConfigError, check_int
from phalanx.core.warp_cache import init_warp
from phalanx.core.warp_streams import warp_stream
from phalanx.sim.cfg import SimCfg
from phalanx.sim.columns import columns, nonfinite_rows
from phalanx.sim.model import constraint_capacity, contact_capacity, round_up
from phalanx.sim.warp_compile import ModuleLoader

if TYPE_CHECKING:
    from phalanx.sim.grid_contacts import GridContacts

# Overflow bits that mean a buffer was too small (contacts or constraint rows were dropped). Solver
# iteration limits (ITERATIONS, LS_ITERATIONS) are not buffer overflows and do not reset a world.
_CONTACT_OVERFLOW = int(
    mjw.OverflowType.BROADPHASE | mjw.OverflowType.NARROWPHASE | mjw.OverflowType.CCD | mjw.OverflowType.HFIELD
)
_CONSTRAINT_OVERFLOW = int(mjw.OverflowType.NEFC | mjw.OverflowType.NJMAX_NNZ)


def free_memory_bytes(device: torch.device) -> int:
    """Bytes that can still be allocated on `device`: free GPU memory, or available host memory."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return psutil.virtual_memory().available


def _warp_bytes(struct: Any, seen: set[int] | None = None) -> int:
    """Bytes held by the Warp arrays of a MuJoCo Warp dataclass (nested ones included)."""
    seen = set() if seen is None else seen
    total = 0
    for f in dataclasses.fields(struct):
        value = getattr(struct, f.name)
        if isinstance(value, wp.array) and id(value) not in seen:
            seen.add(id(value))
            total += value.capacity
        elif dataclasses.is_dataclass(value):
            total += _warp_bytes(value, seen)
    return total


def _object_name(mjm: mujoco.MjModel, obj: mujoco.mjtObj, index: int) -> str:
    """The object's name, or e.g. "body3" when it has none."""
    return mujoco.mj_id2name(mjm, obj, index) or f"{obj.name[6:].lower()}{index}"


class Simulator:
    """Batched MuJoCo Warp model and data with zero-copy torch views.

    Every tensor attribute below is a view of the Warp array MuJoCo Warp writes; it is created
    once and stays valid for the simulator's life. Shapes lead with `num_envs`. qpos/qvel hold
    the state after the last step; derived quantities (xpos, xquat, cvel, cfrc_*, sensordata)
    come from the last substep's forward pass, i.e. one physics step behind qpos.
    """

    def __init__(
        self, mjm: mujoco.MjModel, num_envs: int, device: str, cfg: SimCfg, contacts: GridContacts | None = None
    ):
        check_int("num_envs", num_envs)
        cfg.check()
        for option, value in (("timestep", cfg.dt), ("iterations", cfg.iterations),
                              ("ls_iterations", cfg.ls_iterations), ("tolerance", cfg.tolerance)):  # fmt: skip
            if value is not None:
                setattr(mjm.opt, option, value)
        self.mjm = mjm
        self.cfg = cfg
        self.num_envs = num_envs
        self.device = torch.device(device)
        init_warp()
        self.wp_device = wp.get_device(str(self.device) if self.device.type == "cpu" else f"cuda:{self._cuda_index()}")
        extra = 0 if contacts is None else contacts.max_contacts
        bound = round_up(contact_capacity(mjm) + extra, 4)
        self.nconmax = _buffer("nconmax_per_env", cfg.nconmax_per_env, bound, "contacts")
        # At least one row: with none, MuJoCo Warp skips its solver and with it the M @ qacc that
        # the Euler and implicit integrators' damping solve reads, so a model without constraints
        # would not move at all.
        bound = round_up(max(constraint_capacity(mjm, self.nconmax), 1), 4)
        self.njmax = _buffer("njmax_per_env", cfg.njmax_per_env, bound, "constraint rows")
        with wp.ScopedDevice(self.wp_device):
            self._check_memory()
            self.model = mjw.put_model(mjm)
            self.model.opt.warn_overflow = 0  # overflows are reported by phalanx, per env, with the flag to fix them
            self.model.opt.graph_conditional = not cfg.unroll_solver
            if contacts is not None:  # called by MuJoCo Warp after its collision detection, every physics step
                self.model.callback.contactfilter = contacts.on(self.wp_device)
            try:
                self.data = mjw.make_data(mjm, nworld=num_envs, nconmax=self.nconmax, njmax=self.njmax)
            except RuntimeError as error:  # Warp's allocator: "Failed to allocate N bytes on device ..."
                if "Failed to allocate" not in str(error):
                    raise
                raise ConfigError(f"{num_envs} envs do not fit on {self.device} ({error})", "num_envs") from None
        self._bind_views()
        self._bind_names()
        self.default_qpos = torch.as_tensor(self._home_qpos(), dtype=torch.float32, device=self.device)
        self._graph = None
        self._stepped = False
        self._skip_warp = False
        self._set_const_loads: list[Future] | None = None  # set_const to run before the first launch or step
        self._sensor_ids: dict[tuple[str, ...], torch.Tensor] = {}
        # The physics' Warp modules start compiling now, on every core, while the env is built.
        self._loader: ModuleLoader | None = ModuleLoader(self.wp_device)
        self._request(self._substeps)

    def _check_memory(self) -> None:
        """Refuses, before allocating, an env count whose physics state alone exceeds the device's
        free memory (sized from a one-world MuJoCo Warp data; the env, the policy and the rollout
        need more on top, so this is a floor)."""
        one = mjw.make_data(self.mjm, nworld=1, nconmax=self.nconmax, njmax=self.njmax)
        per_env = _warp_bytes(one)
        free = free_memory_bytes(self.device)
        if per_env * self.num_envs > free:
            raise ConfigError(
                f"{self.num_envs} envs need at least {per_env * self.num_envs / 2**30:,.1f} GiB for the physics "
                f"state alone ({per_env / 1024:,.1f} KiB per env), but {self.device} has {free / 2**30:,.1f} GiB "
                f"free; at most {free // per_env:,} envs fit there",
                "num_envs",
            )

    @property
    def stepped(self) -> bool:
        """Whether physics has run: model fields can no longer be made per-world after that."""
        return self._stepped

    @property
    def dt(self) -> float:
        """Physics timestep in seconds."""
        return float(self.mjm.opt.timestep)

    def _cuda_index(self) -> int:
        return self.device.index if self.device.index is not None else torch.cuda.current_device()

    def _bind_views(self) -> None:
        d = self.data
        t = wp.to_torch
        self.qpos = t(d.qpos)  # (num_envs, nq)
        self.qvel = t(d.qvel)  # (num_envs, nv)
        self.qacc = t(d.qacc)  # (num_envs, nv)
        self.ctrl = t(d.ctrl)  # (num_envs, nu)
        self.actuator_force = t(d.actuator_force)  # (num_envs, nu) from the last substep's forward pass
        self.act = t(d.act)  # (num_envs, na)
        self.qacc_warmstart = t(d.qacc_warmstart)  # (num_envs, nv)
        self.qfrc_applied = t(d.qfrc_applied)  # (num_envs, nv)
        self.qfrc_constraint = t(d.qfrc_constraint)  # (num_envs, nv)
        self.xfrc_applied = t(d.xfrc_applied)  # (num_envs, nbody, 6)
        self.mocap_pos = t(d.mocap_pos)  # (num_envs, nmocap, 3) mocap bodies' positions, world (the env sets them)
        self.mocap_quat = t(d.mocap_quat)  # (num_envs, nmocap, 4) and orientations (w, x, y, z)
        self.xpos = t(d.xpos)  # (num_envs, nbody, 3) body frame positions, world
        self.xquat = t(d.xquat)  # (num_envs, nbody, 4) body orientations (w, x, y, z), world
        self.xmat = t(d.xmat)  # (num_envs, nbody, 3, 3) body rotation matrices, world
        self.site_xpos = t(d.site_xpos)  # (num_envs, nsite, 3) site positions, world
        self.site_xmat = t(d.site_xmat)  # (num_envs, nsite, 3, 3) site rotation matrices, world
        self.xanchor = t(d.xanchor)  # (num_envs, njnt, 3) joint anchor positions, world
        self.xaxis = t(d.xaxis)  # (num_envs, njnt, 3) joint axes (unit), world
        self.subtree_com = t(d.subtree_com)  # (num_envs, nbody, 3) center of mass of each body's subtree, world
        self.cvel = t(d.cvel)  # (num_envs, nbody, 6) com-based velocity (rot, lin)
        self.cfrc_int = t(d.cfrc_int)  # (num_envs, nbody, 6) wrench from parent (torque, force); body_forces
        self.cfrc_ext = t(d.cfrc_ext)  # (num_envs, nbody, 6) external (contact) wrench; body_forces
        self.sensordata = t(d.sensordata)  # (num_envs, nsensordata)
        self.time = t(d.time)  # (num_envs,)
        self.overflow = t(d.overflow)  # (num_envs,) OverflowType bits since the env's last reset

    def _bind_names(self) -> None:
        mjm, dev = self.mjm, self.device
        name = functools.partial(_object_name, mjm)
        self.body_names = [name(mujoco.mjtObj.mjOBJ_BODY, i) for i in range(mjm.nbody)]
        self.actuator_names = [name(mujoco.mjtObj.mjOBJ_ACTUATOR, i) for i in range(mjm.nu)]
        self.sensor_names = [name(mujoco.mjtObj.mjOBJ_SENSOR, i) for i in range(mjm.nsensor)]
        self.site_names = [name(mujoco.mjtObj.mjOBJ_SITE, i) for i in range(mjm.nsite)]
        self.geom_names = [name(mujoco.mjtObj.mjOBJ_GEOM, i) for i in range(mjm.ngeom)]
        self.actuator_gear = torch.tensor(mjm.actuator_gear[:, 0], dtype=torch.float32, device=dev)  # (nu,)
        joint_of_actuator = [
            int(j) if int(t) == int(mujoco.mjtTrn.mjTRN_JOINT) else -1
            for j, t in zip(mjm.actuator_trnid[:, 0], mjm.actuator_trntype, strict=True)
        ]
        # 1-dof joints (hinges and slides), in model order.
        hinge_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        joints = [j for j in range(mjm.njnt) if int(mjm.jnt_type[j]) in hinge_slide]
        self.joint_names = [name(mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints]
        self.joint_qposadr = torch.tensor(mjm.jnt_qposadr[joints], dtype=torch.long, device=dev)  # (J,)
        self.joint_dofadr = torch.tensor(mjm.jnt_dofadr[joints], dtype=torch.long, device=dev)  # (J,)
        # The same, as indexers for reading (`columns`): most models' 1-dof joints are one
        # block of qpos and qvel, so reading them is a view.
        self.joint_qpos_columns = columns(mjm.jnt_qposadr[joints], dev)
        self.joint_dof_columns = columns(mjm.jnt_dofadr[joints], dev)
        limited = mjm.jnt_limited[joints].astype(bool)[:, None]
        ranges = np.where(limited, mjm.jnt_range[joints], [-np.inf, np.inf])
        self.joint_range = torch.tensor(ranges, dtype=torch.float32, device=dev)  # (J, 2)
        # For each actuator, the index in the 1-dof joint list of the joint it drives (-1: none).
        self.actuator_joint_ids = torch.tensor(
            [joints.index(j) if j in joints else -1 for j in joint_of_actuator], dtype=torch.long, device=dev
        )  # (nu,)
        # Joint equalities (q1 - q1_0 = poly(q2 - q2_0), a joint following another: coupled fingers).
        coupled = [
            e for e in range(mjm.neq)
            if int(mjm.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT) and mjm.eq_active0[e] and mjm.eq_obj2id[e] >= 0
        ]  # fmt: skip
        follower, leader = mjm.jnt_qposadr[mjm.eq_obj1id[coupled]], mjm.jnt_qposadr[mjm.eq_obj2id[coupled]]
        self._coupled_qposadr = torch.tensor(np.stack((follower, leader)), dtype=torch.long, device=dev)  # (2, E)
        self._coupled_dofadr = torch.tensor(
            np.stack((mjm.jnt_dofadr[mjm.eq_obj1id[coupled]], mjm.jnt_dofadr[mjm.eq_obj2id[coupled]])),
            dtype=torch.long,
            device=dev,
        )  # (2, E)
        self._coupled_qpos0 = torch.tensor(mjm.qpos0[np.stack((follower, leader))], dtype=torch.float32, device=dev)
        self._coupled_poly = torch.tensor(mjm.eq_data[coupled, :5], dtype=torch.float32, device=dev)  # (E, 5)
        free = [j for j in range(mjm.njnt) if int(mjm.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]
        self.root_qposadr = int(mjm.jnt_qposadr[free[0]]) if free else None
        self.root_dofadr = int(mjm.jnt_dofadr[free[0]]) if free else None

    def per_world(self, field: str) -> torch.Tensor:
        """A torch view of the model field `field` with one row per world, (num_envs, ...):
        MuJoCo Warp reads world w's parameters from row w (domain randomization writes there).
        The first call replaces the shared field by a tiled copy, so it must come before the
        first `step` (kernels and graphs bind the arrays they are launched with)."""
        array = getattr(self.model, field)
        if array.shape[0] != self.num_envs:
            if self.stepped:
                raise RuntimeError(f"per_world({field!r}): call it before the first step")
            tiled = np.repeat(array.numpy()[:1], self.num_envs, axis=0)
            setattr(self.model, field, wp.array(tiled, dtype=array.dtype, device=self.wp_device))
        return wp.to_torch(getattr(self.model, field))

    # Constants MuJoCo Warp derives from body masses (set_const writes them per world).
    _MASS_DERIVED = ("body_subtreemass", "body_invweight0", "dof_invweight0", "tendon_invweight0", "actuator_acc0")

    def recompute_constants(self) -> None:
        """Propagates edited per-world masses or inertias (`per_world("body_mass")`, ...) to the
        constants MuJoCo Warp derives from them (subtree masses, inverse weights), per world.
        Before the first step, like `per_world`. MuJoCo Warp's `set_const` runs once, at the first
        Warp launch or step: its modules compile in the background until then."""
        if self.stepped:
            raise RuntimeError("recompute_constants: call it before the first step (startup events)")
        for field in self._MASS_DERIVED:
            self.per_world(field)
        if self._set_const_loads is None:
            self._set_const_loads = self._request(self._set_const)

    def _set_const(self) -> None:
        mjw.set_const(self.model, self.data)

    def _run_set_const(self) -> None:
        """Runs the `set_const` that `recompute_constants` asked for, once its modules are loaded."""
        if self._set_const_loads is None:
            return
        if self._loader is not None:
            self._loader.wait(self._set_const_loads)
        self._set_const_loads = None
        self._on_stream(self._set_const)

    def sensor_ids(self, names: list[str]) -> torch.Tensor:
        """Columns of `sensordata` holding the named scalar sensors (e.g. touch), cached (terms call
        it every step); a missing or multi-dimensional sensor raises with the model's sensor names."""
        key = tuple(names)
        if key in self._sensor_ids:
            return self._sensor_ids[key]
        columns = self.sensor_columns(names)
        wide = [n for n in names if self.mjm.sensor_dim[self.sensor_names.index(n)] != 1]
        if wide:
            raise ValueError(f"sensors {wide} are not scalar")
        self._sensor_ids[key] = columns
        return columns

    def sensor_columns(self, names: list[str]) -> torch.Tensor:
        """Columns of `sensordata` holding the named sensors of any dimension, concatenated in the
        order given; a missing name raises with the model's sensor names."""
        missing = [n for n in names if n not in self.sensor_names]
        if missing:
            raise ValueError(f"sensors {missing} not in the model; it has {self.sensor_names}")
        ids = [self.sensor_names.index(n) for n in names]
        adr, dim = self.mjm.sensor_adr[ids], self.mjm.sensor_dim[ids]
        columns = [int(a) + k for a, n in zip(adr, dim, strict=True) for k in range(n)]
        return torch.tensor(columns, dtype=torch.long, device=self.device)

    def site_ids(self, names: list[str]) -> torch.Tensor:
        """Indices of the named sites; a missing name raises with the model's site names."""
        missing = [n for n in names if n not in self.site_names]
        if missing:
            raise ValueError(f"sites {missing} not in the model; it has {self.site_names}")
        return torch.tensor([self.site_names.index(n) for n in names], dtype=torch.long, device=self.device)

    def site_index(self, name: str) -> int:
        """The named site's index, a Python int (indexing with it reads nothing back from the
        device, so terms that use it can be captured); a missing name raises with the model's
        site names."""
        if name not in self.site_names:
            raise ValueError(f"sites {[name]} not in the model; it has {self.site_names}")
        return self.site_names.index(name)

    def mocap_index(self, name: str) -> int:
        """The named mocap body's index into `mocap_pos` and `mocap_quat`, a Python int; a missing
        name, or a body that is not a mocap body, raises."""
        if name not in self.body_names:
            raise ValueError(f"bodies {[name]} not in the model; it has {self.body_names}")
        index = int(self.mjm.body_mocapid[self.body_names.index(name)])
        if index < 0:
            raise ValueError(f'body {name!r} is not a mocap body (mocap="true" in the model)')
        return index

    def body_ids(self, names: list[str]) -> torch.Tensor:
        """Indices of the named bodies; a missing name raises with the model's body names."""
        missing = [n for n in names if n not in self.body_names]
        if missing:
            raise ValueError(f"bodies {missing} not in the model; it has {self.body_names}")
        return torch.tensor([self.body_names.index(n) for n in names], dtype=torch.long, device=self.device)

    def _home_qpos(self) -> np.ndarray:
        """The keyframe named "home" if the model has one, else the model's qpos0."""
        key = mujoco.mj_name2id(self.mjm, mujoco.mjtObj.mjOBJ_KEY, "home")
        return self.mjm.key_qpos[key].copy() if key >= 0 else self.mjm.qpos0.copy()

    def _warp_stream(self) -> wp.Stream:
        """Warp's handle on torch's current CUDA stream (`warp_stream`: one per stream)."""
        return warp_stream(torch.cuda.current_stream(self.device))

    def add_step_work(self, work: Callable[[], None]) -> None:
        """Declares Warp work the env step runs through `launch` (e.g. a ray cast): its Warp modules
        start compiling now, beside the physics' (see `compile_step_work`); work declared after the
        first step loads its modules lazily, at its first launch."""
        if self._loader is not None:
            self._request(work)

    def _request(self, work: Callable[[], None]) -> list[Future]:
        """Starts compiling, in the background, the Warp modules `work` launches (`ModuleLoader`),
        leaving every world's state as it was (the dry run that finds them still runs copies and
        fills); returns the loads' futures."""
        state = self.state_dict()
        futures = self._on_stream(lambda: self._loader.request(work))
        self.load_state_dict(state)
        return futures

    def compile_step_work(self) -> None:
        """Waits until every Warp module the physics step and the declared step work launch is
        loaded (compiled on a thread pool since they were declared: Warp would otherwise compile
        them one after another at their first launch). The first `step` calls it; inside a CUDA
        graph capture it does nothing."""
        if self._loader is None or self._capturing():
            return
        self._loader.close()
        self._loader = None

    @contextlib.contextmanager
    def warp_skipped(self) -> Iterator[None]:
        """Within it, `step` and `launch` return at once without running any Warp work, e.g. while
        torch.compile traces the env step as the modules still compile; state they would have
        changed is stale."""
        self._skip_warp = True
        try:
            yield
        finally:
            self._skip_warp = False

    def _capturing(self) -> bool:
        return self.device.type == "cuda" and torch.cuda.is_current_stream_capturing()

    def _substeps(self) -> None:
        for _ in range(self.cfg.decimation):
            mjw.step(self.model, self.data)
        if self.cfg.body_forces:
            # Once per env step, for the last substep's forward pass, instead of in every substep.
            mjw.rne_postconstraint(self.model, self.data)

    @compile_boundary  # Warp launches are not torch ops: torch.compile runs them as they are
    def step(self) -> None:
        """Advances every world by `decimation` physics steps with the current `ctrl`.

        On CUDA the substeps run as one CUDA graph, captured on first use and replayed on torch's
        current stream, so it orders with the torch ops around it and never syncs the host.
        Inside a torch CUDA graph capture (the env's captured step), the substeps are recorded
        into that graph instead.
        """
        if self._skip_warp:
            return
        self._stepped = True
        self.compile_step_work()
        self._run_set_const()
        if self.device.type != "cuda" or not self.cfg.graph or self._capturing():
            self.launch(self._substeps)
            return
        if self._graph is None:
            with wp.ScopedDevice(self.wp_device):
                torch.cuda.current_stream(self.device).synchronize()
                with wp.ScopedCapture() as capture:
                    self._substeps()
            self._graph = capture.graph
        wp.capture_launch(self._graph, stream=self._warp_stream())

    @compile_boundary
    def launch(self, work: Callable[[], None]) -> None:
        """Runs Warp work (e.g. `mujoco_warp.rays` on this model and data) in order with torch's
        current stream: eagerly, or recorded into the torch CUDA graph being captured. Before the
        first step it first waits for the modules `work` launches, compiling them if nobody asked
        for them yet (the rest keep compiling in the background)."""
        if self._skip_warp:
            return
        if self._loader is not None and not self._capturing():
            self._run_set_const()
            self._loader.wait(self._request(work))
        self._on_stream(work)

    def _on_stream(self, work: Callable[[], Any]) -> Any:
        if self.device.type != "cuda":
            with wp.ScopedDevice(self.wp_device):
                return work()
        if self._capturing():
            return self._record_into_torch_capture(work)
        with wp.ScopedDevice(self.wp_device), wp.ScopedStream(self._warp_stream(), sync_enter=False):
            return work()

    def _record_into_torch_capture(self, work: Callable[[], None]) -> None:
        """Records Warp work into the torch CUDA graph being captured on the current stream.

        Warp must be told about the external capture on the very Warp stream object that is
        current while stepping: MuJoCo Warp's solver loop looks the capture up by that object
        and would otherwise fall back to a host-synchronizing loop, which is illegal in capture.
        """
        ws = self._warp_stream()
        wp.capture_begin(device=self.wp_device, stream=ws, external=True, capture_mode=wp.CaptureMode.GLOBAL)
        try:
            with wp.ScopedDevice(self.wp_device), wp.ScopedStream(ws, sync_enter=False, sync_exit=False):
                work()
        finally:
            wp.capture_end(device=self.wp_device, stream=ws)

    def reset_(self, mask: torch.Tensor) -> None:
        """Puts the worlds where `mask` (num_envs,) is True back to the default state, in place.

        Default state: `default_qpos`, zero velocity, control, activation, applied forces, warm
        start, sensor data and body wrenches, time 0, overflow bits cleared. Other worlds are not
        touched. Graph-safe. (Mocap bodies are not reset: a command term that owns one places it,
        `uniform_pose(marker=...)`; equality activations are not reset: phalanx's models have none.)
        """
        m = mask[:, None]
        self.qpos.copy_(torch.where(m, self.default_qpos, self.qpos))
        per_world = (self.qvel, self.qacc, self.ctrl, self.act, self.qacc_warmstart, self.qfrc_applied, self.sensordata)
        for field in per_world:
            field.masked_fill_(m, 0.0)
        for field in (self.xfrc_applied, self.cfrc_int, self.cfrc_ext):
            field.masked_fill_(m[:, :, None], 0.0)
        self.time.masked_fill_(mask, 0.0)
        self.overflow.masked_fill_(mask, 0)

    def follow_joint_equalities_(self, mask: torch.Tensor) -> None:
        """Where `mask` (num_envs,) is True, puts each joint that a joint equality couples to
        another where the equality wants it, position and velocity (after a reset drew the joints
        independently: otherwise the solver yanks them together in the first steps). Graph-safe."""
        if self._coupled_poly.shape[0] == 0:
            return
        follower, leader = self._coupled_qposadr
        x = self.qpos[:, leader] - self._coupled_qpos0[1]  # (num_envs, E)
        powers = torch.stack([x**k for k in range(5)], dim=-1)  # (num_envs, E, 5)
        slope = torch.stack([k * x ** (k - 1) if k else torch.zeros_like(x) for k in range(5)], dim=-1)
        pos = self._coupled_qpos0[0] + (powers * self._coupled_poly).sum(-1)
        vel = (slope * self._coupled_poly).sum(-1) * self.qvel[:, self._coupled_dofadr[1]]
        m = mask[:, None]
        self.qpos[:, follower] = torch.where(m, pos, self.qpos[:, follower])
        self.qvel[:, self._coupled_dofadr[0]] = torch.where(m, vel, self.qvel[:, self._coupled_dofadr[0]])

    # The views that carry state from one step to the next, plus derived ones the observations read.
    STATE_FIELDS = (
        "qpos", "qvel", "act", "ctrl", "qacc", "qacc_warmstart", "qfrc_applied", "xfrc_applied", "qfrc_constraint",
        "xpos", "xquat", "cvel", "cfrc_int", "cfrc_ext", "sensordata", "time", "overflow",
    )  # fmt: skip

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Copies of every world's state: with `load_state_dict` the next steps repeat exactly."""
        return {name: getattr(self, name).clone() for name in self.STATE_FIELDS}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Writes a `state_dict` back into the views, in place (captured graphs stay valid)."""
        for name in self.STATE_FIELDS:
            view = getattr(self, name)
            if state[name].shape != view.shape:
                raise ValueError(
                    f"sim state {name}: saved shape {tuple(state[name].shape)}, env has {tuple(view.shape)}"
                )
            view.copy_(state[name])

    def check_worlds(self) -> torch.Tensor:
        """(num_envs, 3) bool: per world, [contact buffer overflow, constraint buffer overflow,
        diverged: non-finite qpos or |qvel| above `cfg.max_qvel` (or NaN)]. A world with any of
        them must be reset. Graph-safe."""
        contact = (self.overflow & _CONTACT_OVERFLOW) != 0
        constraint = (self.overflow & _CONSTRAINT_OVERFLOW) != 0
        diverged = nonfinite_rows(self.qpos) | ~(self.qvel.abs() <= self.cfg.max_qvel).all(dim=1)  # NaN: not <=
        return torch.stack((contact, constraint, diverged), dim=1)

    def overflow_hint(self, kind: str) -> str:
        """Which buffer overflowed ("contact" or "constraint") and the option that enlarges it."""
        if kind == "contact":
            return (
                f"contact buffer full ({self.nconmax} per env, {self.data.naconmax} in all): "
                f"raise --env.sim.nconmax-per-env"
            )
        return f"constraint rows full ({self.njmax} per env): raise --env.sim.njmax-per-env"


def _buffer(field: str, asked: int | None, bound: int, what: str) -> int:
    """A per-env buffer: `asked`, or the model's `bound` if None. An empty buffer where the model
    may need one is refused: MuJoCo Warp then skips that stage without a sign of overflow (the
    robot falls through the floor, or its joints ignore their limits)."""
    if asked is None:
        return bound
    if asked == 0 and bound > 0:
        raise ConfigError(
            f"0 holds no {what}, and this model may need up to {bound}; give at least 1 (an overflow resets "
            "the env and is reported) or leave it unset for that bound",
            f"env.sim.{field}",
        )
    return asked
