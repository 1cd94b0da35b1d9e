"""The tasks' reduced solver budgets (ant, humanoid, anymal: 4 iterations, 6 line-search steps) against
MuJoCo's full budget: from the same states with the same controls, one physics step lands close
to the converged solve, and a world that stops at the iteration limit is not reset as broken."""

from __future__ import annotations

import mujoco_warp as mjw
import pytest
import torch

import phalanx
from helpers import make_cpu, random_actions
from phalanx.envs.random_numbers import StepRandoms
from phalanx.envs.terrain_scene import TerrainScene
from phalanx.sim import Simulator
from phalanx.sim.model import build_model


def _sim(task: str, full_budget: bool) -> Simulator:
    cfg = phalanx.env_cfg(task)
    if full_budget:
        cfg.sim.iterations = cfg.sim.ls_iterations = None  # the model's: MuJoCo's 100 and 50
    scene = None
    if cfg.terrain is not None:  # 16 robots standing on tiles of every sub-terrain and level
        cfg.terrain.num_rows, cfg.terrain.num_cols = 4, 7
        scene = TerrainScene(cfg.terrain, 16, torch.device("cpu"), StepRandoms(0, torch.device("cpu")))
    sim = Simulator(build_model(cfg.model, cfg.actuators, None if scene is None else scene.add_to), 16, "cpu", cfg.sim)
    if scene is not None:
        sim.qpos[:, :3] += scene.origins
    return sim


@pytest.mark.parametrize("task", ["ant", "humanoid", "anymal-flat", "anymal-rough"])
def test_reduced_solver_budget_stays_close_to_the_full_solve(task: str) -> None:
    full, reduced = _sim(task, full_budget=True), _sim(task, full_budget=False)
    assert reduced.mjm.opt.iterations < full.mjm.opt.iterations
    generator = torch.Generator().manual_seed(1)
    errors = []
    for _ in range(40):  # along the full-budget trajectory, under random controls
        ctrl = torch.rand(full.ctrl.shape, generator=generator) * 2 - 1
        reduced.load_state_dict(full.state_dict())
        full.ctrl[:], reduced.ctrl[:] = ctrl, ctrl
        full.step()
        reduced.step()
        errors.append((full.qvel - reduced.qvel).norm(dim=1) / full.qvel.norm(dim=1).clamp_min(1e-3))
    # Measured: median 0.4 % (ant), 3.3 % (humanoid), 0.01 % (anymal-flat), 0.05 % (anymal-rough); a
    # 2-iteration budget gives 26-29 % (ant, humanoid), 6.6 % (anymal-flat), 4.5 % (anymal-rough).
    assert torch.stack(errors).median() < 0.05


@pytest.mark.parametrize("task", ["ant", "humanoid", "anymal-flat"])
def test_worlds_at_the_iteration_limit_are_not_reset(task: str) -> None:
    env = make_cpu(task, num_envs=16)
    generator = torch.Generator().manual_seed(0)
    limited = False
    for _ in range(30):
        env.step(random_actions(env, generator))
        limited |= bool((env.sim.overflow & int(mjw.OverflowType.ITERATIONS)).any())
    assert limited, "no world reached the iteration limit: the test shows nothing"
    assert int(env.invalid_resets) == 0


def test_the_unrolled_solver_loop_solves_like_the_conditional_one() -> None:
    """`unroll_solver` launches every iteration of the budget; worlds that converged skip them, so
    the states match the conditional loop's (on a CPU that loop checks on the host)."""
    loops = [_sim("ant", full_budget=False) for _ in range(2)]
    assert loops[0].cfg.unroll_solver
    loops[1].model.opt.graph_conditional = True
    generator = torch.Generator().manual_seed(2)
    for _ in range(30):
        ctrl = torch.rand(loops[0].ctrl.shape, generator=generator) * 2 - 1
        for sim in loops:
            sim.ctrl[:] = ctrl
            sim.step()
    torch.testing.assert_close(loops[0].qvel, loops[1].qvel, rtol=0, atol=0)
    torch.testing.assert_close(loops[0].qpos, loops[1].qpos, rtol=0, atol=0)
