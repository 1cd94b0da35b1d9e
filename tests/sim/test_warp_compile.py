"""Compiling the Warp modules of the first step in the background: the dry run runs no kernel and
leaves the state as it was, loads on other threads go on during it, every module the step launches
is loaded by the first step, and torch.compile tracing the step beside it changes no result."""

from __future__ import annotations

import threading

import mujoco_warp as mjw
import torch
import warp as wp
from torch._dynamo.utils import counters

from helpers import make_cpu, random_actions
from phalanx.sim.warp_compile import Loads, ModuleLoader, _dry_run, record_loads


@wp.kernel
def _add_one(x: wp.array(dtype=wp.float32), flag: wp.array(dtype=wp.int32)):
    i = wp.tid()
    x[i] = x[i] + 1.0
    flag[0] = 0


def _loop(x: wp.array, flag: wp.array) -> None:
    # Runs until the kernel clears the flag: without the dry run's one-pass loops it never would.
    wp.capture_while(flag, while_body=lambda: wp.launch(_add_one, dim=x.shape[0], inputs=[x, flag]))


def _not_loaded(loads: Loads, device: wp.Device) -> list[str]:
    return [m.name for m, b in loads if (device.context, b) not in m.execs]


@wp.kernel
def _double(x: wp.array(dtype=wp.float32)):
    i = wp.tid()
    x[i] = 2.0 * x[i]


def test_dry_run_runs_no_kernel_then_the_modules_are_loaded() -> None:
    device = wp.get_device("cpu")
    x = wp.zeros(4, dtype=wp.float32, device=device)
    flag = wp.ones(1, dtype=wp.int32, device=device)
    _add_one.module.unload()
    loader = ModuleLoader(device, max_workers=2)
    assert len(loader.request(lambda: _loop(x, flag))) == 1
    assert x.numpy().tolist() == [0.0] * 4 and flag.numpy()[0] == 1, "a kernel ran during the dry run"
    loader.close()
    assert (device.context, 1) in _add_one.module.execs
    _loop(x, flag)
    assert x.numpy().tolist() == [1.0] * 4


def test_a_dry_run_records_only_its_own_threads_loads() -> None:
    # The loader's threads compile while the main thread dry-runs the next piece of work.
    device = wp.get_device("cpu")
    _double.module.unload()
    loads: Loads = {}
    with _dry_run(loads):
        other = threading.Thread(target=wp.force_load, args=(device, [_double.module], None, 0))
        other.start()
        other.join()
    assert not loads
    assert any(key[0] == device.context for key in _double.module.execs), "the other thread's load was skipped"


def test_declaring_step_work_leaves_the_state_as_it_was() -> None:
    sim = make_cpu("ant", num_envs=4).sim
    generator = torch.Generator().manual_seed(0)
    for name in sim.STATE_FIELDS:  # values the dry run's copies and fills would visibly change
        view = getattr(sim, name)
        view.copy_(torch.randint(0, 100, view.shape, generator=generator).to(view.dtype))
    before = sim.state_dict()
    sim.add_step_work(lambda: mjw.step(sim.model, sim.data))  # its dry run still runs copies and fills
    after = sim.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "declaring step work changed the state"
    sim.compile_step_work()


def test_first_step_finds_every_module_loaded() -> None:
    # anymal-rough: the physics of a heightfield terrain (its height scan reads the terrain grid).
    env = make_cpu("anymal-rough", num_envs=4)
    sim = env.sim
    actions = random_actions(env, torch.Generator().manual_seed(0))
    sim.compile_step_work()
    loads = record_loads(lambda: env.step(actions), sim.wp_device)
    assert len(loads) > 30
    assert not _not_loaded(loads, sim.wp_device)
    env.step(actions)
    assert torch.isfinite(sim.qpos).all()


def test_compiled_step_traced_beside_warp_matches_the_eager_step() -> None:
    # The env traces its compiled step when built, with Warp skipped, and puts the state back; its
    # steps equal the eager env's (up to fusion's rounding) and trace nothing new.
    generator = torch.Generator().manual_seed(0)
    eager, compiled = make_cpu("cartpole", num_envs=8), make_cpu("cartpole", num_envs=8, compile=True)
    stepper, graphs_in_real_steps = compiled.stepper, []

    def counting(actions: torch.Tensor):
        before = counters["stats"]["unique_graphs"]
        out = stepper(actions)
        graphs_in_real_steps.append(counters["stats"]["unique_graphs"] - before)
        return out

    compiled.stepper = counting
    for i in range(3):
        actions = random_actions(eager, generator)
        expected, got = eager.step(actions), compiled.step(actions)
        torch.testing.assert_close(got[0]["policy"], expected[0]["policy"], msg=f"observations, step {i}")
        torch.testing.assert_close(got[1], expected[1], msg=f"rewards, step {i}")
        assert torch.equal(compiled.episode_length, eager.episode_length), f"episode lengths, step {i}"
    assert graphs_in_real_steps == [0, 0, 0]
