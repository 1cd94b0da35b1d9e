"""The classic pipeline of Da and Xie's claim (a), for a task whose actions drive
`quadruped_control` (anymal-qp, anymal-stones-qp): the physics in MuJoCo C and the controller with
its force QP on the CPU, spread over worker processes (each owns a slice of the robots: their
MjData, their `QuadrupedController` with the QP solved per robot by proxsuite, as a robot's own
computer would), and the policy on `--policy-device`, with the observations copied to it and the
actions back at every env step. Its env steps/s are what the full-GPU pipeline
(`phalanx bench throughput`, tools/qp_pipeline.py) is measured against.

On a task with a terrain every worker generates it (the same: its config holds the seed) into
its MuJoCo model, which collides with it as MuJoCo does (the GPU's grid contacts are the
simulator's own shortcut), and places each robot on the tile an env seeded 0 starts it on; the high
level moves footholds to safe ground and lifts swings over it (`footholds_over`), and the policy
also reads the height scan, both from the terrain's height map as the task's env does.

Each env step: the policy (the task's actor network, its last layer zeroed: the network's whole
cost, and zero actions, so that the heuristic high level walks) acts on the observations, which
go to its device and the actions back; every worker runs the task's control steps for its robots
(the heuristic's command, the controller's torques, one mj_step per control step) and writes the
robots' observations (base velocities, gravity, command, joint positions and velocities, the
last actions, the gait phase, and the height scan over a terrain: the task's policy input) to
shared memory. Zero velocity command, robots starting in the home pose, none reset; the lowest
base height above its tile's centre at the end says whether they still stand.

    python tools/classic_pipeline.py anymal-qp [--num-envs 1024] [--workers 16] [--steps 50]
        [--policy-device cuda] [--out F.json]

--out writes a bench.json (kind classic).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import multiprocessing as mp
import os
import sys
import time

import numpy as np
import torch

from phalanx.bench.machine import tool_bench
from phalanx.core.files import write_text_atomic
from phalanx.training.registry import env_cfg, train_cfg

LEGS, JOINTS = ("LF", "RF", "LH", "RH"), ("HAA", "HFE", "KFE")
ACTION_DIM = 3 + 3 + 1 + 2 * len(LEGS) + 1
"""`quadruped_control`'s actions: the center of mass's and the base's angular acceleration, the
gait frequency, each foot's foothold (x, y), the swings' lift."""
STATE_DIM = 3 + 3 + 3 + 3 + 2 * len(LEGS) * len(JOINTS) + ACTION_DIM + 2
"""anymal-qp's policy input: base linear and angular velocity, gravity, command, joint positions
and velocities, last actions, gait phase (sine, cosine); a task with a terrain's adds the height
scan."""


def robots(task: str, num_envs: int):
    """The task's config, its MuJoCo model with its actuators, time step and terrain, and the
    terrain (`TerrainScene` for `num_envs` envs, its `origins` the tiles they start on) or None.
    The solver keeps MuJoCo's own budget (100 iterations, 50 line-search steps, stopping once
    converged): with the task's 4 and 6 (MuJoCo Warp's, unrolled) MuJoCo C's robots collapse
    within a second."""
    from phalanx.envs.random_numbers import StepRandoms
    from phalanx.envs.terrain_scene import TerrainScene
    from phalanx.sim.model import build_model

    cfg = env_cfg(task)
    cpu = torch.device("cpu")
    scene = None
    if cfg.terrain is not None:  # the tiles of an env seeded 0
        scene = TerrainScene(cfg.terrain, num_envs, cpu, StepRandoms(0, cpu), cfg.terrain_command)
    mjm = build_model(cfg.model, cfg.actuators, None if scene is None else scene.add_to, None)
    if cfg.sim.dt is not None:
        mjm.opt.timestep = cfg.sim.dt
    return cfg, mjm, scene


def scan_settings(cfg) -> dict | None:
    """The policy's height scan term's `HeightScanner` settings (its defaults and the term's
    params), or None without one."""
    from phalanx.sensors.height_scan import HeightScanner

    term = cfg.observations["policy"].get("height_scan")
    if term is None:
        return None
    defaults = inspect.signature(HeightScanner).parameters.items()
    return {name: p.default for name, p in defaults if p.default is not p.empty} | dict(term.params)


def obs_dim(cfg) -> int:
    scan = scan_settings(cfg)
    if scan is None:
        return STATE_DIM
    from phalanx.sensors.height_scan import scan_pattern

    return STATE_DIM + len(scan_pattern(scan["size"], scan["resolution"], "cpu"))


def worker(task: str, lo: int, hi: int, shared: dict, barrier, ready) -> None:
    """Steps robots [lo, hi): waits at `barrier` for the actions, runs the control steps, writes the
    observations, waits again."""
    torch.set_num_threads(1)
    import mujoco

    from phalanx.control.footholds import FootholdSearchCfg
    from phalanx.control.heuristic import HeuristicCfg, heuristic_command
    from phalanx.control.quadruped import QuadrupedCfg, QuadrupedController
    from phalanx.sensors.height_scan import scan_pattern, surface_scan
    from phalanx.tasks.anymal.mdp.quadruped_control import foot_ground, footholds_over, quadruped_state, standing_body

    cfg, mjm, scene = robots(task, shared["num_envs"])
    params = cfg.actions.controller.params
    feet_names = [f"{leg}_foot" for leg in LEGS]
    body, height = standing_body(mjm, "base", feet_names)
    body = dataclasses.replace(body, qp_solver="host")
    n = hi - lo
    swing = {name: params[name] for name in ("swing_kp", "swing_kd") if name in params}
    controller = QuadrupedController(QuadrupedCfg(body, **swing), n, len(LEGS))
    heuristic = HeuristicCfg(height=height, frequency=2.0)
    reach, clearance = params.get("foothold_reach", 0.0), params.get("swing_clearance", 0.0)
    search = FootholdSearchCfg(reach=reach) if reach else None
    surface = None if scene is None else scene.height_at
    origins = np.zeros((n, 3)) if scene is None else scene.origins[lo:hi].numpy().astype(float)
    scan = scan_settings(cfg)
    pattern = None if scan is None else scan_pattern(scan["size"], scan["resolution"], "cpu")
    base = mjm.body("base").id
    root = mjm.jnt_qposadr[mjm.body_jntadr[base]]  # the base's free joint: position, then quaternion
    datas = [mujoco.MjData(mjm) for _ in range(n)]
    key = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_KEY, "home")
    for data, origin in zip(datas, origins, strict=True):
        if key >= 0:
            mujoco.mj_resetDataKeyframe(mjm, data, key)
        data.qpos[root : root + 3] += origin  # the robot onto its tile (TerrainScene.place)
        mujoco.mj_forward(mjm, data)
    names = [f"{leg}_{joint}" for leg in LEGS for joint in JOINTS]
    joints = np.array([mjm.joint(name).id for name in names])
    dofs, qpos = mjm.jnt_dofadr[joints], mjm.jnt_qposadr[joints]
    actuators = np.array([mjm.actuator(name).id for name in names])
    feet = np.array([mjm.site(name).id for name in feet_names])
    hips = np.array([mjm.body(f"{leg}_THIGH").id for leg in LEGS])
    free = slice(mjm.body_dofadr[base], mjm.body_dofadr[base] + 6)  # the base's free joint
    radius = float(mjm.site_size[feet[0], 0])
    contact_height = params.get("contact_height", 0.02)
    obs = np.frombuffer(shared["obs"], dtype=np.float32).reshape(-1, obs_dim(cfg))[lo:hi]
    actions = np.frombuffer(shared["actions"], dtype=np.float32).reshape(-1, ACTION_DIM)[lo:hi]
    heights = np.frombuffer(shared["heights"], dtype=np.float32)[lo:hi]
    decimation = cfg.actions.controller.decimation
    dt = mjm.opt.timestep
    ready.wait()
    while True:
        barrier.wait()  # the actions are in
        if shared["stop"].value:
            return
        for _ in range(decimation):
            read = [(d.xmat[base], d.xpos[base], d.qvel[free], d.subtree_com[base], d.xanchor[joints], d.xaxis[joints],
                     d.qvel[dofs], d.site_xpos[feet], d.xpos[hips]) for d in datas]  # fmt: skip
            rotation, base_xpos, base_qvel, com, anchors, axes, leg_qvel, feet_xpos, hip_xpos = (
                torch.from_numpy(np.stack(rows)).float() for rows in zip(*read, strict=True)
            )
            ground = foot_ground(feet_xpos[..., :2], surface, radius)
            state = quadruped_state(
                rotation.view(n, 3, 3), base_xpos, base_qvel, com, anchors.view(n, 4, 3, 3), axes.view(n, 4, 3, 3),
                leg_qvel.view(n, 4, 3), feet_xpos, ground, contact_height,
            )  # fmt: skip
            yaw = torch.atan2(state.rotation[:, 1, 0], state.rotation[:, 0, 0])
            command = heuristic_command(
                heuristic, controller.clock, state.com, state.com_velocity, hip_xpos, torch.zeros(n, 2), yaw, ground
            )
            command.footholds, command.swing_height = footholds_over(
                command.footholds[..., :2], controller.liftoff, surface, radius, search, clearance,
                controller.cfg.swing_height,
            )  # fmt: skip
            torques = controller.step(state, command, dt).torques.numpy()
            for i, data in enumerate(datas):
                data.ctrl[actuators] = torques[i]
                mujoco.mj_step(mjm, data)
        phase = 2 * np.pi * controller.clock.phase.numpy()
        for i, data in enumerate(datas):
            heights[i] = data.qpos[root + 2] - origins[i, 2]
            gravity = data.xmat[base].reshape(3, 3).T @ np.array([0.0, 0.0, -1.0])
            joints_now = (data.qpos[qpos], data.qvel[dofs])
            obs[i, :STATE_DIM] = np.concatenate((data.qvel[free], gravity, np.zeros(3), *joints_now, actions[i],
                                                 (np.sin(phase[i]), np.cos(phase[i]))))  # fmt: skip
        if pattern is not None:
            roots = torch.from_numpy(np.stack([data.qpos[root : root + 7] for data in datas])).float()
            obs[:, STATE_DIM:] = surface_scan(
                roots[:, :3], roots[:, 3:], pattern, surface, scan["offset"], scan["max_height"]
            ).numpy()
        barrier.wait()  # the observations are out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="a task whose actions drive quadruped_control (anymal-qp, anymal-stones-qp)")
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="processes stepping the robots")
    parser.add_argument("--steps", type=int, default=50, help="timed env steps (after 2 untimed)")
    parser.add_argument("--policy-device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None, help="write the results here as a bench.json")
    args = parser.parse_args()
    for flag, value in (("--num-envs", args.num_envs), ("--workers", args.workers), ("--steps", args.steps)):
        if value < 1:
            parser.error(f"{flag}: must be >= 1, got {value}")
    workers = min(args.workers, args.num_envs)
    from phalanx.rl.models import mlp
    from phalanx.tasks.anymal.mdp.quadruped_control import quadruped_control

    cfg = env_cfg(args.task)
    if cfg.actions.controller is None or cfg.actions.controller.func is not quadruped_control:
        parser.error(f"task: {args.task}'s actions do not drive quadruped_control (anymal-qp, anymal-stones-qp)")
    dim = obs_dim(cfg)

    policy = train_cfg(args.task).policy
    device = torch.device(args.policy_device)
    actor = mlp(dim, policy.actor_hidden_dims, ACTION_DIM, policy.activation).to(device)
    torch.nn.init.zeros_(actor[-1].weight)  # the network's full cost, zero actions: the heuristic walks
    torch.nn.init.zeros_(actor[-1].bias)
    ctx = mp.get_context("spawn")
    shared = {
        "num_envs": args.num_envs,
        "obs": ctx.RawArray("f", args.num_envs * dim),
        "actions": ctx.RawArray("f", args.num_envs * ACTION_DIM),
        "heights": ctx.RawArray("f", args.num_envs),
        "stop": ctx.RawValue("b", 0),
    }
    barrier, ready = ctx.Barrier(workers + 1), ctx.Barrier(workers + 1)
    bounds = np.linspace(0, args.num_envs, workers + 1).astype(int)
    procs = [
        ctx.Process(target=worker, args=(args.task, int(lo), int(hi), shared, barrier, ready), daemon=True)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    for p in procs:
        p.start()
    ready.wait()
    obs = np.frombuffer(shared["obs"], dtype=np.float32).reshape(args.num_envs, dim)
    actions = np.frombuffer(shared["actions"], dtype=np.float32).reshape(args.num_envs, ACTION_DIM)
    seconds = {"policy": 0.0, "workers": 0.0}
    start = 0.0
    for step in range(args.steps + 2):
        if step == 2:
            start = time.perf_counter()
            seconds = {"policy": 0.0, "workers": 0.0}
        t0 = time.perf_counter()
        with torch.inference_mode():
            act = actor(torch.from_numpy(obs).to(device))
        actions[:] = act.clamp(-1.0, 1.0).cpu().numpy()  # a host copy each step: the classic loop's
        t1 = time.perf_counter()
        barrier.wait()
        barrier.wait()
        seconds["policy"] += t1 - t0
        seconds["workers"] += time.perf_counter() - t1
    total = time.perf_counter() - start
    shared["stop"].value = 1
    barrier.wait()
    for p in procs:
        p.join()
    heights = np.frombuffer(shared["heights"], dtype=np.float32)
    row = {
        "task": args.task,
        "num_envs": args.num_envs,
        "workers": workers,
        "cpu_count": os.cpu_count(),
        "policy_device": str(device),
        "steps": args.steps,
        "env_steps_per_s": args.num_envs * args.steps / total,
        "ms_per_env_step": 1e3 * total / args.steps,
        "policy_ms_per_env_step": 1e3 * seconds["policy"] / args.steps,
        "workers_ms_per_env_step": 1e3 * seconds["workers"] / args.steps,
        "control_steps_per_env_step": cfg.actions.controller.decimation,
        "base_height_min": float(heights.min()),
        "base_height_mean": float(heights.mean()),
    }
    print(json.dumps(row), flush=True)
    if args.out:
        bench = tool_bench("classic", args.task, "classic_pipeline.py", sys.argv[1:], str(device), results=[row])
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


if __name__ == "__main__":
    main()
