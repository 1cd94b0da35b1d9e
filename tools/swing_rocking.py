"""How much the swing's tracking gains rock a walking ANYmal's base, in MuJoCo C on the CPU: the
heuristic high level over the quadruped controller (force QP, or the centroidal MPC with
`--mpc`) walks 4 s at 0.5 m/s on flat ground, as tests/control/anymal_mujoco.py's walk
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "control"))
from anymal_mujoco import walk  # noqa: E402 (the controller tests' ANYmal with motors in MuJoCo C)

from phalanx.control.mpc import MPCCfg  # noqa: E402

SECONDS, SPEED = 4.0, 0.5


def rocking(kp: float, kd: float, mpc: bool) -> dict[str, float]:
    positions, _, rates = walk(SECONDS, (SPEED, 0.0), MPCCfg() if mpc else None, swing_kp=kp, swing_kd=kd)
    second = round(len(rates) / SECONDS)  # steps per second
    return {
        "swing_kp": kp, "swing_kd": kd, "mpc": mpc, "max": float(rates.max()),
        "p95": float(np.percentile(rates, 95)), "p50": float(np.median(rates)),
        "max_after_1s": float(rates[second:].max()),
        "speed_last_s": float(positions[-1, 0] - positions[-1 - second, 0]),
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
