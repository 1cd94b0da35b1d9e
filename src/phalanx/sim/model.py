"""Loading MuJoCo models and sizing their per-world contact and constraint buffers."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from phalanx.assets import asset_file
from phalanx.core.errors import ConfigError
from phalanx.sim.actuators import ActuatorCfg, apply_actuators
from phalanx.sim.cameras import CameraCfg, add_cameras
from phalanx.sim.model_files import is_xml, restored_spec

# Most contacts MuJoCo's colliders emit for one geom pair, keyed by the pair's types (sorted).
# Pairs not listed are convex-convex (GJK/EPA with multi-contact), bounded at 4.
_G = mujoco.mjtGeom
_MAX_CONTACTS_PER_PAIR = {
    (_G.mjGEOM_PLANE, _G.mjGEOM_SPHERE): 1,
    (_G.mjGEOM_PLANE, _G.mjGEOM_CAPSULE): 2,
    (_G.mjGEOM_PLANE, _G.mjGEOM_ELLIPSOID): 1,
    (_G.mjGEOM_PLANE, _G.mjGEOM_CYLINDER): 4,
    (_G.mjGEOM_PLANE, _G.mjGEOM_BOX): 4,
    (_G.mjGEOM_SPHERE, _G.mjGEOM_SPHERE): 1,
    (_G.mjGEOM_SPHERE, _G.mjGEOM_CAPSULE): 1,
    (_G.mjGEOM_SPHERE, _G.mjGEOM_BOX): 1,
    (_G.mjGEOM_CAPSULE, _G.mjGEOM_CAPSULE): 2,
    (_G.mjGEOM_CAPSULE, _G.mjGEOM_BOX): 2,
    (_G.mjGEOM_BOX, _G.mjGEOM_BOX): 8,
}
_MAX_CONTACTS_CONVEX = 4
_MAX_CONTACTS_HFIELD = 50  # mjMAXCONPAIR


def _xml_or_file(source: str | Path) -> str | Path:
    """An XML string as it is, else the path of an existing file (phalanx's assets by reference)."""
    text = str(source)
    if is_xml(text):
        return text
    path = asset_file(text) or Path(text)
    if not path.is_file():
        reason = "is a directory, not a model file" if path.is_dir() else "no such file"
        raise ConfigError(f"{path}: {reason} (an MJCF or URDF file, or an MJCF string)", "env.model")
    return path


def _parser_says(error: Exception) -> str:
    """MuJoCo's message on one line."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


def _named(source: str | Path) -> str:
    """The model as an error names it: its file, or "the MJCF string"."""
    return "the MJCF string" if is_xml(source) else str(source)


def load_model(source: str | Path) -> mujoco.MjModel:
    """Compiles an MJCF or URDF file, or an MJCF or URDF XML string, into a MuJoCo model.

    URDF goes through MuJoCo's own compiler (`<mujoco>` extensions in the URDF are honoured).
    """
    return build_model(source)


def load_spec(source: str | Path) -> mujoco.MjSpec:
    """An MJCF or URDF file or XML string as an editable `MjSpec` (to add to the model before
    compiling); a model restored from a checkpoint as the checkpoint holds it."""
    restored = restored_spec(str(source))
    if restored is not None:
        return restored
    found = _xml_or_file(source)
    try:
        return mujoco.MjSpec.from_file(str(found)) if isinstance(found, Path) else mujoco.MjSpec.from_string(found)
    except ValueError as error:
        raise ConfigError(f"{_named(found)}: MuJoCo cannot read it: {_parser_says(error)}", "env.model") from None


def build_model(
    source: str | Path,
    actuators: list[ActuatorCfg] | None = None,
    edit: Callable[[mujoco.MjSpec], None] | None = None,
    cameras: dict[str, CameraCfg] | None = None,
) -> mujoco.MjModel:
    """Loads `source` (as `load_spec`), gives it `actuators` (`apply_actuators`) and `cameras`
    (`add_cameras`), lets `edit` change the spec in place (e.g. add a terrain), and compiles it."""
    spec = load_spec(source)
    if actuators:
        apply_actuators(spec, actuators)
    if cameras:
        add_cameras(spec, cameras, "env.cameras")
    if edit is not None:
        edit(spec)
    try:
        mjm = spec.compile()
        if mjm.ncam == 0:  # videos need a camera: one that follows the model, as MuJoCo's viewer would
            add_view_camera(spec, mjm)
            mjm = spec.compile()
        return mjm
    except ValueError as error:
        raise ConfigError(f"{_named(source)}: MuJoCo cannot compile it: {_parser_says(error)}", "env.model") from None


def add_view_camera(spec: mujoco.MjSpec, mjm: mujoco.MjModel) -> None:
    """Adds a camera named "view" that looks at the whole model (`mjm`, `spec` compiled) from in
    front and above, at a distance from its extent, and follows its center of mass (a fixed arm
    stays in view, a walking robot is kept in view)."""
    center, extent = np.asarray(mjm.stat.center, dtype=float), float(mjm.stat.extent)
    direction = np.array([0.0, -1.0, 1.0]) / math.sqrt(2.0)  # from the front, 45 degrees above (as MuJoCo's viewer)
    right, up = np.array([1.0, 0.0, 0.0]), np.cross(direction, [1.0, 0.0, 0.0])
    spec.worldbody.add_camera(
        name="view",
        pos=center + 2.0 * extent * direction,
        xyaxes=[*right, *up],
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM,
    )


def _collidable_pairs(mjm: mujoco.MjModel) -> list[tuple[int, int]]:
    """Geom pairs MuJoCo's default collision filter lets through, plus explicit <pair>s."""
    pairs = []
    weld = mjm.body_weldid
    parent = mjm.body_parentid
    filterparent = not (mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    excluded = {tuple(sorted((int(s >> 16), int(s & 0xFFFF)))) for s in mjm.exclude_signature}
    for g1 in range(mjm.ngeom):
        for g2 in range(g1 + 1, mjm.ngeom):
            b1, b2 = mjm.geom_bodyid[g1], mjm.geom_bodyid[g2]
            w1, w2 = weld[b1], weld[b2]
            if w1 == w2:
                continue
            if filterparent and w1 != 0 and w2 != 0 and (w1 == weld[parent[w2]] or w2 == weld[parent[w1]]):
                continue
            if tuple(sorted((int(b1), int(b2)))) in excluded:
                continue
            compatible = (mjm.geom_contype[g1] & mjm.geom_conaffinity[g2]) or (
                mjm.geom_contype[g2] & mjm.geom_conaffinity[g1]
            )
            if compatible:
                pairs.append((g1, g2))
    pairs.extend((int(a), int(b)) for a, b in zip(mjm.pair_geom1, mjm.pair_geom2, strict=True))
    return pairs


def contact_capacity(mjm: mujoco.MjModel) -> int:
    """Upper bound on the contacts one world of this model can have at once."""
    if mjm.opt.disableflags & (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT):
        return 0
    total = 0
    for g1, g2 in _collidable_pairs(mjm):
        types = tuple(sorted((int(mjm.geom_type[g1]), int(mjm.geom_type[g2]))))
        if _G.mjGEOM_HFIELD in types or types == (_G.mjGEOM_MESH, _G.mjGEOM_MESH):
            total += _MAX_CONTACTS_HFIELD
        else:
            total += _MAX_CONTACTS_PER_PAIR.get(types, _MAX_CONTACTS_CONVEX)
    return total


def constraint_capacity(mjm: mujoco.MjModel, contacts_per_world: int) -> int:
    """Upper bound on constraint rows of one world: contacts, joint limits, equalities, friction loss."""
    if mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONSTRAINT:
        return 0
    condim = int(mjm.geom_condim.max()) if mjm.ngeom else 1
    elliptic = mjm.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    rows_per_contact = condim if (elliptic or condim == 1) else 2 * (condim - 1)
    limits = int(np.sum(mjm.jnt_limited)) + int(np.sum(mjm.tendon_limited))
    equality = 6 * mjm.neq
    friction = int(np.sum(mjm.dof_frictionloss > 0))
    return contacts_per_world * rows_per_contact + limits + equality + friction


def round_up(value: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is >= value."""
    return int(math.ceil(value / multiple)) * multiple
