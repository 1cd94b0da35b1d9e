"""Contacts of spheres and capsules with a terrain's height grid, in one Warp kernel instead of
MuJoCo Warp's heightfield collision (`TerrainCfg.contacts`, "grid").

MuJoCo Warp runs GJK and EPA against each prism under a geom; for spheres and capsules the
distance to a prism has a closed form. `GridContacts` computes it for MuJoCo's prisms (each cell
split along its diagonal from (x0, y0) to (x1, y1)) after a cheap cull (`_segment_prism`), keeps
up to four contacts per geom by MuJoCo Warp's rule and appends them from the model's contact
callback (in captured steps too). Unlike MuJoCo Warp: a capsule deep in a prism gets its deepest
point's depth below the nearest face, not EPA's separating translation; four contacts per geom,
not per geom and block; margins are true distances; a geom fallen below the prisms gets none.
"""

# ruff: noqa: UP018 (Warp: int(0) and float(0.0) declare variables that loops change, not constants)
from __future__ import annotations

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from phalanx.core.errors import ConfigError

TILE = wp.constant(8)
"""Cells along a side of the tiles whose highest point lets the scan skip them at once."""
CACHED = wp.constant(50)
"""Contacts of one geom held while its prisms are scanned; with more, the four kept are found by
scanning again (MuJoCo Warp holds 50, and resets a world whose geom touches more prisms)."""

# Loops stay loops: the geometry is inlined once, not once per unrolled iteration.
wp.set_module_options({"enable_backward": False, "max_unroll": 1})

_vec_cached = wp.types.vector(length=CACHED, dtype=float)
_mat_cached = wp.types.matrix(shape=(CACHED, 3), dtype=float)
_vec5 = wp.types.vector(length=5, dtype=float)

_MIN_SPREAD = wp.constant(1.0e-3)  # m: a further contact lies at least this far from those kept (MuJoCo Warp)
_MIN_MU = wp.constant(mujoco.mjMINMU)
_MIN_VAL = wp.constant(mujoco.mjMINVAL)
_CAPSULE = wp.constant(int(mujoco.mjtGeom.mjGEOM_CAPSULE))
_SQRT_HALF = wp.constant(0.5**0.5)
_CONSTRAINT_CONTACT = wp.constant(1)  # MuJoCo Warp's ContactType.CONSTRAINT: a contact the solver uses


@wp.func
def _on_segment(a: wp.vec3, b: wp.vec3, p: wp.vec3) -> wp.vec3:
    """The point of segment a-b closest to p."""
    ab = b - a
    t = wp.clamp(wp.dot(p - a, ab) / wp.max(wp.dot(ab, ab), 1.0e-12), 0.0, 1.0)
    return a + t * ab


@wp.func
def _max4(v: wp.vec4) -> float:
    return wp.max(wp.max(v[0], v[1]), wp.max(v[2], v[3]))


@wp.func
def _nearest_face(faces: wp.vec4, n: wp.vec3, m0: wp.vec3, m1: wp.vec3, m2: wp.vec3):
    """The largest of a point's signed distances to a prism's top and walls (`faces`, in that
    order; the top on ties) and that face's outward normal: where the point is inside, its depth
    below the nearest face."""
    depth = faces[0]
    normal = n
    if faces[1] > depth:
        depth = faces[1]
        normal = m0
    if faces[2] > depth:
        depth = faces[2]
        normal = m1
    if faces[3] > depth:
        depth = faces[3]
        normal = m2
    return depth, normal


@wp.func
def _wall_point(p: wp.vec3, a: wp.vec3, b: wp.vec3, m: wp.vec3, bottom: float):
    """p projected onto the wall under edge a -> b (outward normal m), and whether the foot of the
    projection lies on the wall (else another feature is at least as close)."""
    q = p - wp.dot(p - a, m) * m
    e = wp.vec3(b[0] - a[0], b[1] - a[1], 0.0)
    u = wp.dot(wp.vec3(q[0] - a[0], q[1] - a[1], 0.0), e) / wp.max(wp.dot(e, e), 1.0e-12)
    on_wall = u >= 0.0 and u <= 1.0 and q[2] <= a[2] + u * (b[2] - a[2]) and q[2] >= bottom
    return q, on_wall


@wp.func
def _keep_nearer(p: wp.vec3, q: wp.vec3, best: float, best_q: wp.vec3, valid: bool):
    d = wp.length(p - q)
    if valid and d < best:
        return d, q
    return best, best_q


@wp.func
def _point_prism(
    p: wp.vec3, v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, n: wp.vec3, m0: wp.vec3, m1: wp.vec3, m2: wp.vec3,
    bottom: float, reach: float,
):  # fmt: skip
    """Signed distance from p to the prism under the counter-clockwise triangle v0 v1 v2 (n its
    upward unit normal; m0, m1, m2 the outward normals of the walls under v0 v1, v1 v2, v2 v0)
    down to height `bottom`; the prism's surface point nearest p; the unit normal there, pointing
    out of the prism (toward p when p is outside). 1e10 where a face's plane alone puts p at least
    `reach` away (the distance to a convex set is at least that beyond any of its faces' planes)."""
    top = wp.dot(p - v0, n)
    faces = wp.vec4(top, wp.dot(p - v0, m0), wp.dot(p - v1, m1), wp.dot(p - v2, m2))
    if _max4(faces) >= reach:
        return 1.0e10, p, n
    if _max4(faces) <= 0.0:  # inside: the nearest face
        depth, normal = _nearest_face(faces, n, m0, m1, m2)
        return depth, p - depth * normal, normal
    # Outside: the nearest of the top's, the walls', the top edges' and the corners' closest points.
    f = p - top * n
    on_top = wp.dot(f - v0, m0) <= 0.0 and wp.dot(f - v1, m1) <= 0.0 and wp.dot(f - v2, m2) <= 0.0
    best, q = _keep_nearer(p, f, 1.0e10, p, on_top)
    for side in range(3):
        start = wp.where(side == 0, v0, wp.where(side == 1, v1, v2))
        stop = wp.where(side == 0, v1, wp.where(side == 1, v2, v0))
        w, on_wall = _wall_point(p, start, stop, wp.where(side == 0, m0, wp.where(side == 1, m1, m2)), bottom)
        best, q = _keep_nearer(p, w, best, q, on_wall)
        best, q = _keep_nearer(p, _on_segment(start, stop, p), best, q, True)
        best, q = _keep_nearer(p, wp.vec3(start[0], start[1], wp.clamp(p[2], bottom, start[2])), best, q, True)
    return best, q, (p - q) / wp.max(best, 1.0e-12)


@wp.func
def _segment_segment(p1: wp.vec3, q1: wp.vec3, p2: wp.vec3, q2: wp.vec3):
    """Closest points of segments p1-q1 and p2-q2 (Ericson, Real-Time Collision Detection, 5.1.9)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, r)
    s = float(0.0)
    t = float(0.0)
    if a <= 1.0e-12:
        t = wp.clamp(f / wp.max(e, 1.0e-12), 0.0, 1.0)
    else:
        c = wp.dot(d1, r)
        if e <= 1.0e-12:
            s = wp.clamp(-c / a, 0.0, 1.0)
        else:
            b = wp.dot(d1, d2)
            denom = a * e - b * b
            if denom > 1.0e-12:
                s = wp.clamp((b * f - c * e) / denom, 0.0, 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = wp.clamp(-c / a, 0.0, 1.0)
            elif t > 1.0:
                t = 1.0
                s = wp.clamp((b - c) / a, 0.0, 1.0)
    return p1 + s * d1, p2 + t * d2


@wp.func
def _segment_prism(
    a: wp.vec3, b: wp.vec3, v0: wp.vec3, v1: wp.vec3, v2: wp.vec3, n: wp.vec3, m0: wp.vec3, m1: wp.vec3,
    m2: wp.vec3, bottom: float, reach: float,
):  # fmt: skip
    """Signed distance from segment a-b to the prism of `_point_prism`; the segment's point and the
    prism's surface point that realize it; the unit normal pointing out of the prism. 1e10 where
    the faces' planes alone put every point of the segment at least `reach` away."""
    d = b - a
    # h(t), the largest of the faces' signed plane distances of a + t d, is convex and piecewise
    # linear; its minimum over [0, 1] lies at an end or where two faces' lines cross. It is the
    # depth below the nearest face where the segment is inside, a lower bound of the distance
    # where it is outside.
    c = wp.vec4(wp.dot(a - v0, n), wp.dot(a - v0, m0), wp.dot(a - v1, m1), wp.dot(a - v2, m2))
    k = wp.vec4(wp.dot(d, n), wp.dot(d, m0), wp.dot(d, m1), wp.dot(d, m2))
    best_t = float(0.0)
    best_h = _max4(c)
    if _max4(c + k) < best_h:
        best_t = 1.0
        best_h = _max4(c + k)
    for i in range(4):
        for j in range(i + 1, 4):
            dk = k[i] - k[j]
            if wp.abs(dk) > 1.0e-12:
                t = (c[j] - c[i]) / dk
                if t > 0.0 and t < 1.0 and _max4(c + t * k) < best_h:
                    best_t = t
                    best_h = _max4(c + t * k)
    if best_h >= reach:
        return 1.0e10, a, a, n
    if best_h <= 0.0:  # overlapping: the deepest point and its nearest face
        s = a + best_t * d
        depth, normal = _nearest_face(c + best_t * k, n, m0, m1, m2)
        return depth, s, s - depth * normal, normal
    # Apart: the ends against the prism, the segment against the prism's top and vertical edges.
    best = float(1.0e10)
    best_s = wp.vec3(a)
    best_q = wp.vec3(a)
    for end in range(2):
        tip = wp.where(end == 0, a, b)
        dt, qt, nt = _point_prism(tip, v0, v1, v2, n, m0, m1, m2, bottom, 1.0e10)
        if dt < best:
            best = dt
            best_s = tip
            best_q = qt
    for edge in range(6):
        start = wp.where(edge % 3 == 0, v0, wp.where(edge % 3 == 1, v1, v2))
        stop = wp.where(edge % 3 == 0, v1, wp.where(edge % 3 == 1, v2, v0))
        if edge >= 3:  # the vertical edge under `start`
            stop = wp.vec3(start[0], start[1], bottom)
        s, q = _segment_segment(a, b, start, stop)
        if wp.length(s - q) < best:
            best = wp.length(s - q)
            best_s = s
            best_q = q
    return best, best_s, best_q, (best_s - best_q) / wp.max(best, 1.0e-12)


@wp.func
def _mixed_params(
    geom_condim: wp.array[int],
    geom_priority: wp.array[int],
    geom_solmix: wp.array2d[float],
    geom_solref: wp.array2d[wp.vec2],
    geom_solimp: wp.array2d[_vec5],
    geom_friction: wp.array2d[wp.vec3],
    g1: int,
    g2: int,
    worldid: int,
):
    """Condim, friction, solref and solimp of a contact between geoms g1 and g2 in `worldid`, by
    MuJoCo's rules: the geom of higher priority gives them; at equal priority the larger condim
    and frictions, and solref and solimp mixed by the geoms' solmix."""
    w = worldid % geom_solmix.shape[0]
    solmix1 = geom_solmix[w, g1]
    solmix2 = geom_solmix[w, g2]
    f1 = geom_friction[worldid % geom_friction.shape[0], g1]
    f2 = geom_friction[worldid % geom_friction.shape[0], g2]
    p1 = geom_priority[g1]
    p2 = geom_priority[g2]
    mix = float(1.0)
    condim = geom_condim[g1]
    f = f1
    if p2 > p1:
        mix = 0.0
        condim = geom_condim[g2]
        f = f2
    elif p1 == p2:
        condim = wp.max(geom_condim[g1], geom_condim[g2])
        f = wp.max(f1, f2)
        if solmix1 < _MIN_VAL and solmix2 < _MIN_VAL:
            mix = 0.5
        elif solmix1 < _MIN_VAL:
            mix = 0.0
        elif solmix2 >= _MIN_VAL:
            mix = solmix1 / (solmix1 + solmix2)
    friction = _vec5(f[0], f[0], f[1], f[2], f[2])
    for i in range(5):
        friction[i] = wp.max(friction[i], _MIN_MU)
    sr1 = geom_solref[worldid % geom_solref.shape[0], g1]
    sr2 = geom_solref[worldid % geom_solref.shape[0], g2]
    solref = wp.min(sr1, sr2)
    if sr1[0] > 0.0 and sr2[0] > 0.0:
        solref = mix * sr1 + (1.0 - mix) * sr2
    si = worldid % geom_solimp.shape[0]
    solimp = mix * geom_solimp[si, g1] + (1.0 - mix) * geom_solimp[si, g2]
    return condim, friction, solref, solimp


@wp.func
def _write_contact(
    naconmax: int,
    index: int,
    dist: float,
    pos: wp.vec3,
    normal: wp.vec3,
    margin: float,
    condim: int,
    friction: _vec5,
    solref: wp.vec2,
    solimp: _vec5,
    geoms: wp.vec2i,
    worldid: int,
    contact_dist_out: wp.array[float],
    contact_pos_out: wp.array[wp.vec3],
    contact_frame_out: wp.array[wp.mat33],
    contact_includemargin_out: wp.array[float],
    contact_friction_out: wp.array[_vec5],
    contact_solref_out: wp.array[wp.vec2],
    contact_solreffriction_out: wp.array[wp.vec2],
    contact_solimp_out: wp.array[_vec5],
    contact_dim_out: wp.array[int],
    contact_geom_out: wp.array[wp.vec2i],
    contact_efc_address_out: wp.array2d[int],
    contact_worldid_out: wp.array[int],
    contact_type_out: wp.array[int],
    contact_geomcollisionid_out: wp.array[int],
    contact_adhesion_out: wp.array[float],
    nacon_out: wp.array[int],
):
    """Appends one contact to MuJoCo Warp's list, as its collision functions do (a full list is
    counted past its end, which MuJoCo Warp reports as every world's narrowphase overflow)."""
    cid = wp.atomic_add(nacon_out, 0, 1)
    if cid >= naconmax:
        return
    # The contact frame: the normal and MuJoCo Warp's tangents (math.make_frame).
    b = wp.vec3(0.0, 0.0, 1.0)
    if normal[1] > -0.5 and normal[1] < 0.5:
        b = wp.vec3(0.0, 1.0, 0.0)
    b = wp.normalize(b - normal * wp.dot(normal, b))
    c = wp.cross(normal, b)
    contact_dist_out[cid] = dist
    contact_pos_out[cid] = pos
    contact_frame_out[cid] = wp.mat33(normal[0], normal[1], normal[2], b[0], b[1], b[2], c[0], c[1], c[2])
    contact_includemargin_out[cid] = margin
    contact_friction_out[cid] = friction
    contact_solref_out[cid] = solref
    contact_solreffriction_out[cid] = wp.vec2(0.0, 0.0)
    contact_solimp_out[cid] = solimp
    contact_dim_out[cid] = condim
    contact_geom_out[cid] = geoms
    contact_worldid_out[cid] = worldid
    contact_type_out[cid] = _CONSTRAINT_CONTACT
    contact_geomcollisionid_out[cid] = index
    contact_adhesion_out[cid] = 0.0
    for i in range(contact_efc_address_out.shape[1]):
        contact_efc_address_out[cid, i] = -1


@wp.func
def _prism_contact(
    z00: float, z10: float, z01: float, z11: float, spacing: float, bottom: float, i: int, j: int, half: int,
    a: wp.vec3, b: wp.vec3, capsule: bool, radius: float, reach: float,
):  # fmt: skip
    """The contact of a sphere (a, radius) or a capsule (segment a-b, radius) with one prism of
    grid cell (i, j) (corner heights z00 at (x0, y0), z10 at (x1, y0), ...): `half` 0 the
    triangle (x0, y0) (x1, y0) (x1, y1), 1 the triangle (x0, y0) (x1, y1) (x0, y1). Returns the
    signed distance (1e10 when the prism's top lies below the geom, the geom below the prism's
    bottom, or the prism's faces' planes put the geom's core farther than `reach` away) and, in
    world coordinates, the contact point (halfway between the surfaces) and the normal (out of
    the terrain)."""
    c00 = wp.vec3(0.0, 0.0, z00)
    c11 = wp.vec3(spacing, spacing, z11)
    v1 = wp.vec3(spacing, 0.0, z10)
    v2 = c11
    m0 = wp.vec3(0.0, -1.0, 0.0)
    m1 = wp.vec3(1.0, 0.0, 0.0)
    m2 = wp.vec3(-_SQRT_HALF, _SQRT_HALF, 0.0)
    if half == 1:
        v1 = c11
        v2 = wp.vec3(0.0, spacing, z01)
        m0 = wp.vec3(_SQRT_HALF, -_SQRT_HALF, 0.0)
        m1 = wp.vec3(0.0, 1.0, 0.0)
        m2 = wp.vec3(-1.0, 0.0, 0.0)
    if wp.max(wp.max(c00[2], v1[2]), v2[2]) < wp.min(a[2], b[2]) - reach:  # the top below the geom
        return 1.0e10, wp.vec3(0.0), wp.vec3(0.0)
    if wp.max(a[2], b[2]) < bottom - reach:  # fallen through, below the prisms' bottom
        return 1.0e10, wp.vec3(0.0), wp.vec3(0.0)
    # In the cell's frame (its corner (x0, y0) at the origin), for float32's sake far out.
    origin = wp.vec3(float(i) * spacing, float(j) * spacing, 0.0)
    la = a - origin
    lb = b - origin
    n = wp.normalize(wp.cross(v1 - c00, v2 - c00))
    s = la
    if capsule:
        sd, s, q, normal = _segment_prism(la, lb, c00, v1, v2, n, m0, m1, m2, bottom, reach)
    else:
        sd, q, normal = _point_prism(la, c00, v1, v2, n, m0, m1, m2, bottom, reach)
    return sd - radius, 0.5 * (q + s - radius * normal) + origin, normal


@wp.func
def _spread(slot: int, p: wp.vec3, p0: wp.vec3, n0: wp.vec3, p1: wp.vec3, p2: wp.vec3) -> float:
    """How well contact point p spreads the contacts kept before `slot` (MuJoCo Warp's measures):
    its distance from the deepest p0; from the line through p0 and p1; from both lines to p2."""
    if slot == 1:
        return wp.length(p - p0)
    if slot == 2:
        return wp.abs(wp.dot(p - p0, wp.cross(n0, p0 - p1)))
    return wp.abs(wp.dot(p - p0, wp.cross(n0, p0 - p2))) + wp.abs(wp.dot(p1 - p, wp.cross(n0, p1 - p2)))


@wp.kernel
def _grid_contacts(
    # Model:
    geom_type: wp.array[int],
    geom_condim: wp.array[int],
    geom_priority: wp.array[int],
    geom_solmix: wp.array2d[float],
    geom_solref: wp.array2d[wp.vec2],
    geom_solimp: wp.array2d[_vec5],
    geom_size: wp.array2d[wp.vec3],
    geom_friction: wp.array2d[wp.vec3],
    geom_margin: wp.array2d[float],
    geom_gap: wp.array2d[float],
    # Terrain:
    heights: wp.array2d[float],
    tile_top: wp.array2d[float],
    spacing: float,
    bottom: float,
    block_geom: wp.array2d[int],
    block_cells: int,
    colliders: wp.array[int],
    # Data in:
    naconmax_in: int,
    geom_xpos_in: wp.array2d[wp.vec3],
    geom_xmat_in: wp.array2d[wp.mat33],
    # Data out:
    contact_dist_out: wp.array[float],
    contact_pos_out: wp.array[wp.vec3],
    contact_frame_out: wp.array[wp.mat33],
    contact_includemargin_out: wp.array[float],
    contact_friction_out: wp.array[_vec5],
    contact_solref_out: wp.array[wp.vec2],
    contact_solreffriction_out: wp.array[wp.vec2],
    contact_solimp_out: wp.array[_vec5],
    contact_dim_out: wp.array[int],
    contact_geom_out: wp.array[wp.vec2i],
    contact_efc_address_out: wp.array2d[int],
    contact_worldid_out: wp.array[int],
    contact_type_out: wp.array[int],
    contact_geomcollisionid_out: wp.array[int],
    contact_adhesion_out: wp.array[float],
    nacon_out: wp.array[int],
):
    # Neighbouring threads take one geom in neighbouring worlds: the same shape, the same code path.
    k, worldid = wp.tid()
    g = colliders[k]
    size = geom_size[worldid % geom_size.shape[0], g]
    radius = size[0]
    center = geom_xpos_in[worldid, g]
    a = center
    b = center
    capsule = geom_type[g] == _CAPSULE
    if capsule:
        rot = geom_xmat_in[worldid, g]
        axis = wp.vec3(rot[0, 2], rot[1, 2], rot[2, 2])
        a = center - size[1] * axis
        b = center + size[1] * axis
    t = block_geom[0, 0]  # every block has the terrain's contact settings
    w = worldid % geom_margin.shape[0]
    margin = geom_margin[w, t] + geom_margin[w, g]
    gap = geom_gap[worldid % geom_gap.shape[0], t] + geom_gap[worldid % geom_gap.shape[0], g]
    reach = radius + wp.max(margin + gap, 0.0)

    # The grid cells under the geom's bounding box (grid point (i, j) at x = i h, y = j h).
    i0 = wp.max(int(wp.floor((wp.min(a[0], b[0]) - reach) / spacing)), 0)
    i1 = wp.min(int(wp.floor((wp.max(a[0], b[0]) + reach) / spacing)), heights.shape[0] - 2)
    j0 = wp.max(int(wp.floor((wp.min(a[1], b[1]) - reach) / spacing)), 0)
    j1 = wp.min(int(wp.floor((wp.max(a[1], b[1]) + reach) / spacing)), heights.shape[1] - 2)
    low = wp.min(a[2], b[2]) - reach

    # Scan 0 finds the contacts (the first CACHED kept), the deepest and the geoms' parameters;
    # then up to three more are kept as MuJoCo Warp keeps them, each the one that best spreads
    # those kept (`_spread`) if at least 1 mm from them: from the cache, or by scanning again.
    dists = _vec_cached()
    points = _mat_cached()
    normals = _mat_cached()
    count = int(0)
    kept = wp.vec4i(-1, -1, -1, -1)
    p0 = wp.vec3(0.0)
    n0 = wp.vec3(0.0)
    p1 = wp.vec3(0.0)
    p2 = wp.vec3(0.0)
    condim = int(0)
    friction = _vec5(0.0)
    solref = wp.vec2(0.0)
    solimp = _vec5(0.0)
    geoms = wp.vec2i(0, g)
    for slot in range(4):
        best = float(-1.0e10)  # slot 0 scores a contact by -distance, the others by `_spread`
        pick = int(-1)
        dist = float(0.0)
        p = wp.vec3(0.0)
        normal = wp.vec3(0.0)
        if slot > 0 and count <= CACHED:
            for c in range(count):
                if c != kept[0] and c != kept[1] and c != kept[2]:
                    q = wp.vec3(points[c, 0], points[c, 1], points[c, 2])
                    spread = _spread(slot, q, p0, n0, p1, p2)
                    if spread > best:
                        best = spread
                        pick = c
                        dist = dists[c]
                        p = q
                        normal = wp.vec3(normals[c, 0], normals[c, 1], normals[c, 2])
        else:
            c = int(0)
            for ti in range(i0 // TILE, i1 // TILE + 1):
                for tj in range(j0 // TILE, j1 // TILE + 1):
                    if tile_top[ti, tj] < low:  # the whole tile lies below the geom
                        continue
                    for i in range(wp.max(i0, ti * TILE), wp.min(i1, ti * TILE + TILE - 1) + 1):
                        for j in range(wp.max(j0, tj * TILE), wp.min(j1, tj * TILE + TILE - 1) + 1):
                            z00 = heights[i, j]
                            z10 = heights[i + 1, j]
                            z01 = heights[i, j + 1]
                            z11 = heights[i + 1, j + 1]
                            if wp.max(wp.max(z00, z10), wp.max(z01, z11)) < low:
                                continue
                            for half in range(2):
                                d, q, nq = _prism_contact(
                                    z00, z10, z01, z11, spacing, bottom, i, j, half, a, b, capsule, radius, reach
                                )
                                if d < margin + gap:
                                    if slot == 0:
                                        if c < CACHED:
                                            dists[c] = d
                                            for x in range(3):
                                                points[c, x] = q[x]
                                                normals[c, x] = nq[x]
                                        spread = -d
                                    elif c == kept[0] or c == kept[1] or c == kept[2]:
                                        spread = -1.0e10
                                    else:
                                        spread = _spread(slot, q, p0, n0, p1, p2)
                                    if spread > best:
                                        best = spread
                                        pick = c
                                        dist = d
                                        p = q
                                        normal = nq
                                    c += 1
            if slot == 0:
                count = c
        if pick < 0 or (slot > 0 and best > 0.0 and best < _MIN_SPREAD):
            return
        kept[slot] = pick
        if slot == 0:
            p0 = p
            n0 = normal
            condim, friction, solref, solimp = _mixed_params(
                geom_condim, geom_priority, geom_solmix, geom_solref, geom_solimp, geom_friction, t, g, worldid
            )
            bi = wp.clamp(int(wp.floor(center[0] / spacing)) // block_cells, 0, block_geom.shape[0] - 1)
            bj = wp.clamp(int(wp.floor(center[1] / spacing)) // block_cells, 0, block_geom.shape[1] - 1)
            geoms = wp.vec2i(block_geom[bi, bj], g)
        elif slot == 1:
            p1 = p
        elif slot == 2:
            p2 = p
        _write_contact(
            naconmax_in,
            slot,
            dist,
            p,
            normal,
            margin,
            condim,
            friction,
            solref,
            solimp,
            geoms,
            worldid,
            contact_dist_out,
            contact_pos_out,
            contact_frame_out,
            contact_includemargin_out,
            contact_friction_out,
            contact_solref_out,
            contact_solreffriction_out,
            contact_solimp_out,
            contact_dim_out,
            contact_geom_out,
            contact_efc_address_out,
            contact_worldid_out,
            contact_type_out,
            contact_geomcollisionid_out,
            contact_adhesion_out,
            nacon_out,
        )


def tile_tops(heights: np.ndarray, tile: int) -> np.ndarray:
    """(ceil((nx - 1) / tile), ceil((ny - 1) / tile)) highest grid point of each tile of `tile` x
    `tile` cells (its cells' far corners included)."""
    nx, ny = heights.shape
    ti, tj = -(-(nx - 1) // tile), -(-(ny - 1) // tile)
    pad = np.full((ti * tile + 1, tj * tile + 1), -np.inf)
    pad[:nx, :ny] = heights
    core = pad[: ti * tile, : tj * tile].reshape(ti, tile, tj, tile).max(axis=(1, 3))
    far_row = pad[tile::tile, : tj * tile].reshape(ti, tj, tile).max(axis=2)
    far_col = pad[: ti * tile, tile::tile].reshape(ti, tile, tj).max(axis=1)
    return np.maximum(np.maximum(core, pad[tile::tile, tile::tile]), np.maximum(far_row, far_col))


def grid_colliders(mjm: mujoco.MjModel, blocks: list[int]) -> list[int]:
    """The geoms MuJoCo's filter lets collide with the terrain's heightfield geoms `blocks` (their
    contype and conaffinity bits; geoms of static or mocap bodies and of bodies excluded from the
    world body left out). Each must be a sphere or a capsule."""
    t = blocks[0]
    pairs = [(int(s >> 16), int(s & 0xFFFF)) for s in mjm.exclude_signature]
    excluded = {b1 + b2 for b1, b2 in pairs if min(b1, b2) == 0}  # bodies excluded from the world body
    colliders = []
    for g in range(mjm.ngeom):
        body = int(mjm.geom_bodyid[g])
        if mjm.body_weldid[body] == 0 or mjm.body_mocapid[body] >= 0 or body in excluded:
            continue  # static and mocap bodies never collide with the world's geoms (MuJoCo's filter)
        if not (mjm.geom_contype[g] & mjm.geom_conaffinity[t] or mjm.geom_contype[t] & mjm.geom_conaffinity[g]):
            continue
        if int(mjm.geom_type[g]) not in (int(mujoco.mjtGeom.mjGEOM_SPHERE), int(mujoco.mjtGeom.mjGEOM_CAPSULE)):
            name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
            kind = mujoco.mjtGeom(int(mjm.geom_type[g])).name[7:].lower()
            body_name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, body)
            raise ConfigError(
                f"grid contacts collide spheres and capsules with the terrain, and geom {name!r} of body "
                f"{body_name!r} is a {kind}: exclude the body (env.terrain.exclude_bodies) or use 'mujoco'",
                "env.terrain.contacts",
            )
        if mjm.geom_adhesion[g] != 0 or mjm.geom_adhesion[t] != 0:
            message = f"grid contacts have no adhesion; geom {g} or the terrain has some: use 'mujoco'"
            raise ConfigError(message, "env.terrain.contacts")
        colliders.append(g)
    return colliders


class GridContacts:
    """Contacts of `colliders` (geom ids: spheres and capsules) with the terrain `heights` (grid
    point (i, j) at x = i * spacing, y = j * spacing; every prism reaching down to `bottom`), whose
    heightfield geoms `block_geoms` (one per block of `block_cells` cells a side) name the terrain
    in each contact. Calling it with a MuJoCo Warp model and data appends the contacts (the model's
    `callback.contactfilter`); `on(device)` binds it to a device first."""

    def __init__(
        self, heights: np.ndarray, spacing: float, bottom: float, block_geoms: np.ndarray, block_cells: int,
        colliders: list[int],
    ):  # fmt: skip
        self.heights, self.spacing, self.bottom = heights, spacing, bottom
        self.block_geoms, self.block_cells, self.colliders = block_geoms, block_cells, colliders
        self._arrays: tuple[wp.array, ...] | None = None

    @property
    def max_contacts(self) -> int:
        """Most contacts one world can get: four per collider."""
        return 4 * len(self.colliders)

    def on(self, device: wp.Device) -> GridContacts:
        """A copy whose grid and geom tables live on `device`."""
        bound = GridContacts(
            self.heights, self.spacing, self.bottom, self.block_geoms, self.block_cells, self.colliders
        )
        bound._arrays = (
            wp.array(self.heights.astype(np.float32), dtype=float, device=device),
            wp.array(tile_tops(self.heights, TILE).astype(np.float32), dtype=float, device=device),
            wp.array(self.block_geoms.astype(np.int32), dtype=int, device=device),
            wp.array(np.asarray(self.colliders, dtype=np.int32), dtype=int, device=device),
        )
        return bound

    def __call__(self, m: mjw.Model, d: mjw.Data) -> None:
        if self._arrays is None:
            raise RuntimeError("GridContacts.on(device) first")
        heights, tile_top, block_geoms, colliders = self._arrays
        c = d.contact
        wp.launch(
            _grid_contacts,
            dim=(colliders.shape[0], d.nworld),
            inputs=[
                m.geom_type,
                m.geom_condim,
                m.geom_priority,
                m.geom_solmix,
                m.geom_solref,
                m.geom_solimp,
                m.geom_size,
                m.geom_friction,
                m.geom_margin,
                m.geom_gap,
                heights,
                tile_top,
                self.spacing,
                self.bottom,
                block_geoms,
                self.block_cells,
                colliders,
                d.naconmax,
                d.geom_xpos,
                d.geom_xmat,
            ],  # fmt: skip
            outputs=[
                c.dist,
                c.pos,
                c.frame,
                c.includemargin,
                c.friction,
                c.solref,
                c.solreffriction,
                c.solimp,
                c.dim,
                c.geom,
                c.efc_address,
                c.worldid,
                c.type,
                c.geomcollisionid,
                c.adhesion,
                d.nacon,
            ],  # fmt: skip
        )


def grid_contacts(
    mjm: mujoco.MjModel, heights: np.ndarray, spacing: float, bottom: float, blocks: np.ndarray, block_cells: int
) -> GridContacts:
    """The contacts of the geoms that collide with a height grid (`heights` every `spacing` m,
    prisms down to `bottom`) that `mjm` holds as heightfield geoms `blocks` (one per block of
    `block_cells` cells a side), for a `Simulator` to add; MuJoCo's own collision of those geoms is
    turned off in `mjm`, which the simulator must be built from afterwards."""
    unsupported = {
        "flexes": mjm.nflex > 0,
        "sleeping": bool(mjm.opt.enableflags & mujoco.mjtEnableBit.mjENBL_SLEEP),
        "surface velocities": bool(mjm.flg_surfacevel),
    }
    for what, present in unsupported.items():
        if present:
            raise ConfigError(f"grid contacts do not handle a model with {what}: use 'mujoco'", "env.terrain.contacts")
    colliders = grid_colliders(mjm, blocks.ravel().tolist())
    mjm.geom_contype[blocks] = 0
    mjm.geom_conaffinity[blocks] = 0
    return GridContacts(heights, spacing, bottom, blocks, block_cells, colliders)
