"""Compiling the Warp modules of the first step at once: the dry run runs no kernel and leaves the
state as it was, and afterwards every module the step launches is loaded."""

from __future__ import annotations

import torch
import warp as wp

from helpers import make_cpu, random_actions
from phalanx.sim.warp_compile import Loads, _dry_run, compile_launched


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


def test_dry_run_runs_no_kernel_then_the_modules_are_loaded() -> None:
    device = wp.get_device("cpu")
    x = wp.zeros(4, dtype=wp.float32, device=device)
    flag = wp.ones(1, dtype=wp.int32, device=device)
    _add_one.module.unload()
    assert compile_launched(lambda: _loop(x, flag), device, max_workers=2) == 1
    assert x.numpy().tolist() == [0.0] * 4 and flag.numpy()[0] == 1, "a kernel ran during the dry run"
    assert (device.context, 1) in _add_one.module.execs
    _loop(x, flag)
    assert x.numpy().tolist() == [1.0] * 4


def test_first_step_finds_every_module_loaded_and_the_state_untouched() -> None:
    # anymal-rough: the physics plus the height scan's ray cast (declared step work); its dry run
    # fills sensordata, which must be put back.
    env = make_cpu("anymal-rough", num_envs=4)
    sim = env.sim
    assert not sim.stepped
    before = sim.state_dict()
    sim.compile_step_work()
    after = sim.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "compile_step_work changed the state"
    loads: Loads = {}
    with wp.ScopedDevice(sim.wp_device), _dry_run(loads):
        for work in sim._step_work:
            work()
    assert len(loads) > 30
    assert not _not_loaded(loads, sim.wp_device)
    env.step(random_actions(env, torch.Generator().manual_seed(0)))
    assert torch.isfinite(sim.qpos).all()
