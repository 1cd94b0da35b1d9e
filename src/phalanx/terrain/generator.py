"""Height grids of sub-terrains, after Isaac Lab's terrain generator (and Rudin et al.).

The terrain is `num_rows` x `num_cols` square tiles of `tile_size` m. The row index is the
difficulty level (along +x, 0 easiest), the column picks the sub-terrain type by `proportions`.
Heights are sampled every `horizontal_scale` m on a grid shared by neighbouring tiles; everything
is deterministic from `seed`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from phalanx.core.errors import ConfigError


def _border_distance(n: int, scale: float) -> np.ndarray:
    """(n, n) distance (m) of each grid point of a tile from the tile's border."""
    idx = np.arange(n) * scale
    edge = np.minimum(idx, idx[-1] - idx)
    return np.minimum(edge[:, None], edge[None, :])


def _clear_platform(heights: np.ndarray, scale: float) -> np.ndarray:
    """Flattens the 2 m square platform at the center of a tile's (n, n) heights (where envs
    spawn), in place, and returns the heights."""
    coords = np.arange(heights.shape[0]) * scale
    center = np.abs(coords - heights.shape[0] * scale / 2) < 1.0
    heights[np.ix_(center, center)] = 0.0
    return heights


def flat(n: int, scale: float, difficulty: float, rng: np.random.Generator) -> np.ndarray:
    return np.zeros((n, n))


def random_rough(n: int, scale: float, difficulty: float, rng: np.random.Generator) -> np.ndarray:
    """Uniform noise of amplitude 2-10 cm in 1 cm steps."""
    amplitude = 0.02 + 0.08 * difficulty
    return np.round(rng.uniform(-amplitude, amplitude, (n, n)) / 0.01) * 0.01


def _pyramid(distance: np.ndarray, height: np.ndarray, platform: float) -> np.ndarray:
    """Heights rising with the distance from the border, flat on the central platform."""
    top = height[distance >= distance.max() - platform / 2].min() if (distance > 0).any() else 0.0
    return np.minimum(height, top)


def pyramid_slope(n: int, scale: float, difficulty: float, rng: np.random.Generator, down: bool = False):
    """A four-sided pyramid of slope 0-0.4 (rise over run) around a 2 m platform; `down`: a pit."""
    distance = _border_distance(n, scale)
    heights = _pyramid(distance, 0.4 * difficulty * distance, platform=2.0)
    return -heights if down else heights


def pyramid_stairs(n: int, scale: float, difficulty: float, rng: np.random.Generator, down: bool = False):
    """Stairs of 0.3 m treads and 5-23 cm risers up to a 2 m platform; `down`: into a pit."""
    step = 0.05 + 0.18 * difficulty
    distance = _border_distance(n, scale)
    heights = _pyramid(distance, step * np.floor(distance / 0.3), platform=2.0)
    return -heights if down else heights


def discrete_obstacles(n: int, scale: float, difficulty: float, rng: np.random.Generator) -> np.ndarray:
    """30 boxes of 1-2 m, 5-20 cm high or deep, off a 2 m central platform."""
    heights = np.zeros((n, n))
    h = 0.05 + 0.15 * difficulty
    for _ in range(30):
        w = int(rng.uniform(1.0, 2.0) / scale)
        i, j = rng.integers(0, n - w, 2)
        heights[i : i + w, j : j + w] = rng.choice([-h, h])
    return _clear_platform(heights, scale)


def stepping_stones(n: int, scale: float, difficulty: float, rng: np.random.Generator) -> np.ndarray:
    """Square stones (0.8 m down to 0.3 m) separated by 5-30 cm gaps over 1 m deep holes."""
    stone = 0.8 - 0.5 * difficulty
    gap = 0.05 + 0.25 * difficulty
    pitch = stone + gap
    coords = np.arange(n) * scale
    on = (coords % pitch) < stone
    return _clear_platform(np.where(on[:, None] & on[None, :], 0.0, -1.0), scale)


def random_stones(n: int, scale: float, difficulty: float, rng: np.random.Generator) -> np.ndarray:
    """Stepping stones of random height and spacing over holes, off a 2 m central platform:
    square stones 0.6 m down to 0.3 m wide, each shifted at random within its cell of the grid so
    that gaps between stones range from none (the easiest level: blocks of uneven height) up to
    10-30 cm, their tops uniform within +-(2 + 13 x difficulty) cm of the platform's (Da and
    Xie's stones of random heights). The holes deepen with the square of the difficulty, from 5 cm
    to 1 m (6 cm on the second of ten levels, 34 cm on the sixth): a foot that misses a stone on
    the first levels with gaps can still step out. On a grid of `scale` m a gap narrower than
    `scale` is a hole of one grid point or none; a grid of 5 cm resolves the first gaps."""
    stone = 0.6 - 0.3 * difficulty
    gap = 0.1 * difficulty
    jitter = 0.2 * difficulty  # a stone's shift in its cell: gaps from `gap` up to `gap` + `jitter`
    rise = 0.02 + 0.13 * difficulty
    cell = stone + gap + jitter
    size = n * scale
    heights = np.full((n, n), -(0.05 + 0.95 * difficulty**2))
    coords = np.arange(n) * scale
    for x0 in np.arange(0.0, size, cell):
        for y0 in np.arange(0.0, size, cell):
            x, y = x0 + rng.uniform(0, jitter + 1e-9), y0 + rng.uniform(0, jitter + 1e-9)
            xs = (coords >= x) & (coords < x + stone)
            ys = (coords >= y) & (coords < y + stone)
            heights[np.ix_(xs, ys)] = rng.uniform(-rise, rise)
    return _clear_platform(heights, scale)


SUB_TERRAINS: dict[str, Callable[..., np.ndarray]] = {
    "flat": flat,
    "random_rough": random_rough,
    "slope_up": pyramid_slope,
    "slope_down": lambda n, s, d, r: pyramid_slope(n, s, d, r, down=True),
    "stairs_up": pyramid_stairs,
    "stairs_down": lambda n, s, d, r: pyramid_stairs(n, s, d, r, down=True),
    "discrete_obstacles": discrete_obstacles,
    "stepping_stones": stepping_stones,
    "random_stones": random_stones,
}


@dataclass
class TerrainCfg:
    """A grid of sub-terrains: rows are difficulty levels, columns sub-terrain types."""

    num_rows: int = 10
    num_cols: int = 20
    tile_size: float = 8.0
    """Side of a square tile (m)."""
    horizontal_scale: float = 0.1
    """Grid spacing of the heights (m)."""
    proportions: dict[str, float] = field(
        default_factory=lambda: {
            "flat": 0.1,
            "random_rough": 0.2,
            "slope_up": 0.1,
            "slope_down": 0.1,
            "stairs_up": 0.2,
            "stairs_down": 0.2,
            "discrete_obstacles": 0.1,
        }
    )
    """Share of the columns each sub-terrain type gets."""
    border_width: float = 0.0
    """Flat ground (m) around the grid, so robots on the outer tiles do not walk off the edge."""
    seed: int = 0
    exclude_bodies: tuple[str, ...] = ()
    """Bodies whose geoms never collide with the terrain (MuJoCo `<exclude>` with the world body).
    For a body whose touching the ground only ends the episode: `site_touches_terrain` tells that
    from the terrain's heights, for a fraction of the cost of colliding a large geom with the
    heightfield."""
    contacts: str = "grid"
    """How the terrain collides: "grid", phalanx's contacts of spheres and capsules with the height
    grid in one kernel (the same prisms and contacts as MuJoCo's, several times faster on a GPU);
    "mujoco", MuJoCo Warp's heightfield collision (GJK/EPA per prism, any geom type)."""


@dataclass
class Terrain:
    """Generated heights (m) on a grid: `heights[i, j]` at x = i * h, y = j * h (h the horizontal
    scale; the border, if any, included), and each tile's type and the world position of its center."""

    cfg: TerrainCfg
    heights: np.ndarray
    tile_types: list[str]
    """Sub-terrain type of each column."""
    origins: np.ndarray
    """(num_rows, num_cols, 3) center of each tile: x, y and the height there."""


def _column_types(cfg: TerrainCfg) -> list[str]:
    unknown = sorted(set(cfg.proportions) - set(SUB_TERRAINS))
    if unknown:
        raise ConfigError(f"terrain.proportions: unknown sub-terrains {unknown}; allowed: {', '.join(SUB_TERRAINS)}")
    total = sum(cfg.proportions.values())
    if total <= 0 or min(cfg.proportions.values()) < 0:
        raise ConfigError(f"terrain.proportions: need non-negative shares with a positive sum, got {cfg.proportions}")
    bounds = np.cumsum([p / total for p in cfg.proportions.values()])
    names = list(cfg.proportions)
    return [names[int(np.searchsorted(bounds, (c + 0.5) / cfg.num_cols))] for c in range(cfg.num_cols)]


def generate_terrain(cfg: TerrainCfg) -> Terrain:
    """Builds the height grid of `cfg`, deterministic from `cfg.seed`."""
    if cfg.num_rows < 1 or cfg.num_cols < 1:
        raise ConfigError(f"terrain: num_rows and num_cols must be >= 1, got {cfg.num_rows} x {cfg.num_cols}")
    px = round(cfg.tile_size / cfg.horizontal_scale)
    if px < 4 or abs(px * cfg.horizontal_scale - cfg.tile_size) > 1e-9:
        raise ConfigError(
            f"terrain.tile_size: {cfg.tile_size} m must be a multiple (>= 4) of horizontal_scale {cfg.horizontal_scale}"
        )
    if cfg.border_width < 0:
        raise ConfigError(f"terrain.border_width: must be >= 0 m, got {cfg.border_width}")
    types = _column_types(cfg)
    rng = np.random.default_rng(cfg.seed)
    heights = np.zeros((cfg.num_rows * px + 1, cfg.num_cols * px + 1))
    origins = np.zeros((cfg.num_rows, cfg.num_cols, 3))
    for r in range(cfg.num_rows):
        difficulty = r / max(cfg.num_rows - 1, 1)
        for c, name in enumerate(types):
            tile = SUB_TERRAINS[name](px + 1, cfg.horizontal_scale, difficulty, rng)
            heights[r * px : (r + 1) * px + 1, c * px : (c + 1) * px + 1] = tile
            center = (r * px + px // 2, c * px + px // 2)
            origins[r, c] = (center[0] * cfg.horizontal_scale, center[1] * cfg.horizontal_scale, heights[center])
    border = round(cfg.border_width / cfg.horizontal_scale)
    heights = np.pad(heights, border)
    origins[..., :2] += border * cfg.horizontal_scale
    return Terrain(cfg=cfg, heights=heights, tile_types=types, origins=origins)
