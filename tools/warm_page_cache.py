"""Reads torch's, Triton's, Warp's and MuJoCo Warp's libraries once, by compiling a tiny Warp
kernel and a tiny torch.compile function, so that the first measured process of a start-up
comparison on a fresh machine does not pay the disk reads alone. Point the compile caches at a
directory of their own (WARP_CACHE_PATH, TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR).

    python tools/warm_page_cache.py [DEVICE]
"""

from __future__ import annotations

import sys

import mujoco_warp  # noqa: F401
import torch
import warp as wp

import phalanx.training.registry  # noqa: F401
import phalanx.training.trainer  # noqa: F401


@wp.kernel
def twice(x: wp.array(dtype=float)):
    x[wp.tid()] = 2.0 * x[wp.tid()]


def main(device: str) -> None:
    wp.launch(twice, dim=4, inputs=[wp.zeros(4, dtype=float, device=device)], device=device)
    wp.synchronize_device(device)
    print(float(torch.compile(lambda x: (x @ x).relu().sum())(torch.ones(8, 8, device=device))))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
