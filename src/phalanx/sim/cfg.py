"""`SimCfg`: the physics settings of a task (plain data: importing it loads no Warp)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.errors import check_int, check_positive, check_range


@dataclass
class SimCfg:
    """Physics settings of a task."""

    dt: float | None = None
    """Physics timestep in seconds; None keeps the model's `<option timestep>`."""
    decimation: int = 2
    """Physics substeps per env step (the policy acts every `decimation * dt` seconds)."""
    nconmax_per_env: int | None = None
    """Contact buffer per env (the pool holds num_envs times this, shared by all envs). None: the
    upper bound computed from the model's collidable geom pairs."""
    njmax_per_env: int | None = None
    """Constraint rows per env (hard per-env limit). None: the bound from contacts, limits,
    equalities and friction loss, and at least 4 (MuJoCo Warp integrates nothing without a row)."""
    iterations: int | None = None
    """Constraint solver iterations per physics step at most (MuJoCo's `opt.iterations`); None
    keeps the model's (MuJoCo's default: 100). A world stops early once it converges, but the
    batch steps as long as its slowest world."""
    ls_iterations: int | None = None
    """Line-search iterations per solver iteration at most (`opt.ls_iterations`); None keeps the
    model's (default 50)."""
    tolerance: float | None = None
    """Solver convergence tolerance (`opt.tolerance`); None keeps the model's (default 1e-8)."""
    unroll_solver: bool = False
    """On CUDA, launch the solver's `iterations` one after another instead of in MuJoCo Warp's
    graph-conditional loop, which checks after each iteration whether every world converged.
    With a small budget and moving robots some world always needs the whole budget, so the checks
    only cost time; worlds that converged skip the remaining iterations either way (same result)."""
    body_forces: bool = False
    """Compute per-body interaction and external (contact) wrenches, `cfrc_int`/`cfrc_ext`, once
    per env step (for the state the last substep's forward pass saw)."""
    max_qvel: float = 1e3
    """A world whose |qvel| exceeds this anywhere (m/s or rad/s) has diverged and is reset like a
    NaN one. MuJoCo's own bound (1e10) comes too late: a world accelerating toward it earns
    rewards of -1e15 that wreck the value targets of every env for several iterations. Random
    actions reach 48 rad/s on anymal, 300 on the humanoid."""
    graph: bool = True
    """On CUDA, capture the physics substeps once as a CUDA graph and replay it (off: eager
    launches, for debugging; many times slower)."""

    def check(self, field: str = "env.sim") -> None:
        """Raises ConfigError naming the first invalid field (`FIELD.NAME`), its value and what is allowed."""
        if self.dt is not None:
            check_positive(f"{field}.dt", self.dt, " seconds (or None: the model's timestep)")
        check_int(f"{field}.decimation", self.decimation)
        optional_ints = {"nconmax_per_env": 0, "njmax_per_env": 0, "iterations": 1, "ls_iterations": 1}
        for name, minimum in optional_ints.items():
            value = getattr(self, name)
            if value is not None:
                check_int(f"{field}.{name}", value, minimum=minimum)
        check_positive(f"{field}.max_qvel", self.max_qvel)
        if self.tolerance is not None:
            check_range(f"{field}.tolerance", self.tolerance, low=0.0)
