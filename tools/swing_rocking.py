"""How much the swing's tracking gains rock a walking ANYmal's base, in MuJoCo C on the CPU: the
heuristic high level over the quadruped controller (force QP, or the centroidal MPC with
`--mpc`) walks 4 s at 0.5 m/s on flat ground, as tests/control/test_legged_control.py's walk
does, once per `KP,KD` (swing_kp N/m, swing_kd N s/m); prints the base's roll and pitch rates
(largest, 95th percentile, median, largest after the first second) and the speed of its last
second, and writes them as JSON with `--out`.

    python tools/swing_rocking.py [--mpc] --gains 800,30 3200,120 3200,60 [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mujoco
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "control"))
import test_legged_control as walk_test  # noqa: E402 (the test's ANYmal with motors and its state readers)

from phalanx.control.mpc import MPCCfg  # noqa: E402
from phalanx.control.quadruped import QuadrupedCfg, QuadrupedController  # noqa: E402


def rocking(kp: float, kd: float, mpc: bool, seconds: float = 4.0, velocity: float = 0.5) -> dict[str, float]:
    model = walk_test._anymal_with_motors()
    data = walk_test._standing(model)
    dt = model.opt.timestep
    cfg = QuadrupedCfg(walk_test._body_cfg(model), mpc=MPCCfg() if mpc else None, swing_kp=kp, swing_kd=kd)
    controller = QuadrupedController(cfg, 1, 4)
    ground = float(walk_test._legs(model, data)[2][0, 0, 2])
    high = walk_test.HeuristicCfg(height=float(data.subtree_com[1][2]) - ground)
    thighs = [model.body(f"{foot}_THIGH").id for foot in walk_test.FEET]
    rates, positions = [], []
    for _ in range(round(seconds / dt)):
        state = walk_test._state(model, data)
        rates.append(state.angular_velocity[0, :2].abs().max().item())
        hips = torch.tensor(data.xpos[thighs], dtype=torch.float32)[None]
        command = walk_test.heuristic_command(
            high, controller.clock, state.com, state.com_velocity, hips, torch.tensor([[velocity, 0.0]]),
            torch.zeros(1), ground,
        )  # fmt: skip
        if mpc:
            command.com_acceleration = torch.zeros(1, 3)
        data.ctrl[:] = controller.step(state, command, dt).torques[0].numpy()
        mujoco.mj_step(model, data)
        positions.append(data.qpos[0])
    r, second = np.array(rates), round(1.0 / dt)
    return {
        "swing_kp": kp, "swing_kd": kd, "mpc": mpc, "max": float(r.max()), "p95": float(np.percentile(r, 95)),
        "p50": float(np.median(r)), "max_after_1s": float(r[second:].max()),
        "speed_last_s": float(positions[-1] - positions[-1 - second]),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gains", nargs="+", default=["800,30"], help="KP,KD pairs")
    parser.add_argument("--mpc", action="store_true", help="the centroidal MPC's forces instead of the force QP's")
    parser.add_argument("--out", help="write the rows here as JSON")
    args = parser.parse_args()
    rows = []
    for pair in args.gains:
        try:
            kp, kd = (float(x) for x in pair.split(","))
        except ValueError:
            parser.error(f"--gains: expected KP,KD numbers, got {pair!r}")
        rows.append(rocking(kp, kd, args.mpc))
        r = rows[-1]
        print(
            f"{'mpc' if args.mpc else 'qp'} swing_kp {kp:g} swing_kd {kd:g}: roll/pitch rate max {r['max']:.2f}, "
            f"p95 {r['p95']:.2f}, median {r['p50']:.2f}, max after 1 s {r['max_after_1s']:.2f} rad/s; "
            f"speed {r['speed_last_s']:.3f} m/s"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
