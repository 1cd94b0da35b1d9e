"""Speed of the quadruped low-level controller alone (gait clock, body controller with its force
QP, swing tracking, J' torques): one controller step for a batch of robots captured in a CUDA
graph and replayed, per batch size, with the share of its force QP (the same QP solve captured
alone). No simulator.

    python tools/quadruped_controller_speed.py [--batches 1024,4096,16384] [--qp-iterations 25]
        [--qp-backend torch|warp] [--mpc] [--out F.json]

With --mpc the body's forces come from the centroidal MPC (`MPCCfg`'s defaults; its own solver,
the torch backend): "body controller" is then the MPC's QP built and solved.

The robots stand in a trot-ready pose (feet about 0.35 x 0.22 m around the center of mass, 0.5
m below it) with a little noise per robot; the command asks for the weight plus a small
acceleration and steps to below the hips. A physics step of an env with decimation D runs D
controller steps. --out writes the rows as a bench.json (`bench-table controller` in the docs,
through `phalanx bench docs`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import torch

from phalanx.bench.machine import tool_bench
from phalanx.bench.physics import captured_seconds
from phalanx.control.body import BodyCfg, yaw_rotation
from phalanx.control.mpc import MPCCfg
from phalanx.control.qp import QPSettings
from phalanx.control.quadruped import QuadrupedCfg, QuadrupedCommand, QuadrupedController, QuadrupedState
from phalanx.core.files import write_text_atomic

BODY = BodyCfg(mass=49.4, inertia=(1.0, 3.0, 3.5))


def robots(batch: int, device: torch.device, seed: int = 0) -> tuple[QuadrupedState, QuadrupedCommand]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    hips = torch.tensor([[0.28, 0.22, 0.0], [0.28, -0.22, 0.0], [-0.28, 0.22, 0.0], [-0.28, -0.22, 0.0]])
    com = torch.tensor([0.0, 0.0, 0.55]).expand(batch, 3)
    feet = com[:, None] + hips + torch.tensor([0.0, 0.0, -0.53]) + 0.02 * torch.randn(batch, 4, 3, generator=g)
    down = torch.tensor([0.0, 0.0, -0.285])
    anchors = com[:, None, None] + hips[None, :, None] + torch.stack((torch.zeros(3), torch.zeros(3), down))
    axes = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]).expand(batch, 4, 3, 3)
    state = QuadrupedState(
        rotation=torch.eye(3).expand(batch, 3, 3),
        angular_velocity=0.05 * torch.randn(batch, 3, generator=g),
        com=com,
        com_velocity=0.05 * torch.randn(batch, 3, generator=g),
        feet=feet,
        feet_velocity=0.05 * torch.randn(batch, 4, 3, generator=g),
        anchors=anchors.expand(batch, 4, 3, 3),
        axes=axes,
    )
    footholds = feet.clone()
    footholds[..., :2] = (com[:, None] + hips)[..., :2]
    command = QuadrupedCommand(
        com_acceleration=0.3 * torch.randn(batch, 3, generator=g),
        frequency=torch.full((batch,), 2.0),
        footholds=footholds,
        target_rotation=yaw_rotation(torch.zeros(batch)),
        velocity=torch.zeros(batch, 2),
        yaw_rate=torch.zeros(batch),
        height=torch.full((batch,), 0.55),
    )

    def moved(fields: dict) -> dict:
        return {k: None if v is None else v.to(device).contiguous() for k, v in fields.items()}

    return QuadrupedState(**moved(vars(state))), QuadrupedCommand(**moved(vars(command)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1024,4096,16384")
    parser.add_argument("--qp-iterations", type=int, default=25)
    parser.add_argument("--qp-backend", default="torch")
    parser.add_argument("--mpc", action="store_true", help="forces from the centroidal MPC instead of the force QP")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device("cuda")
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        qp = QPSettings(iterations=args.qp_iterations, backend=args.qp_backend)
        cfg = QuadrupedCfg(dataclasses.replace(BODY, qp=qp), mpc=MPCCfg() if args.mpc else None)
        controller = QuadrupedController(cfg, batch, 4, device)
        state, command = robots(batch, device)
        step_s = captured_seconds(lambda c=controller, s=state, m=command: c.step(s, m, 0.005), device)
        out = controller.step(state, command, 0.005)
        if args.mpc:
            solve = (state, command, command.frequency, out.stance)
            qp_s = captured_seconds(lambda c=controller, a=solve: c.mpc_forces(*a), device)
        else:
            body = controller.body
            wrench_args = (state.rotation, command.com_acceleration, torch.zeros_like(command.com_acceleration))
            feet = state.feet - state.com[:, None]
            qp_s = captured_seconds(lambda b=body, w=wrench_args, f=feet, st=out.stance: b.forces(*w, f, st), device)
        torch.cuda.synchronize(device)
        row = {
            "batch": batch,
            "qp_iterations": args.qp_iterations,
            "qp_backend": args.qp_backend,
            "body_controller": "mpc" if args.mpc else "qp",
            "controller_step_ms": 1e3 * step_s,
            "controller_steps_per_s": batch / step_s,
            "body_controller_ms": 1e3 * qp_s,
            "qp_share": qp_s / step_s,
            "torques_finite": bool(torch.isfinite(out.torques).all()),
            "qp_primal_residual_max_N": float(out.qp.primal_residual.max()),
        }
        rows.append(row)
        print(json.dumps(row))
    if args.out:  # a bench.json of kind "controller" (`bench-table controller` in the docs)
        script, argv = "quadruped_controller_speed.py", sys.argv[1:]
        bench = tool_bench("controller", "quadruped controller", script, argv, str(device), results=rows)
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


if __name__ == "__main__":
    main()
