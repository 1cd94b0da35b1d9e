"""The follow camera: it follows the shown env the page names, the last shown one past them."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import unused_port
from phalanx.training.registry import make
from phalanx.viewer.markers import host_array

pytest.importorskip("viser")


def test_the_camera_follows_the_env_the_page_names() -> None:
    from phalanx.viewer.server import Viewer

    env = make("anymal-flat", num_envs=4, device="cpu")
    qpos = host_array(env.sim.qpos)
    viewer = Viewer(env.sim.mjm, "test", qpos, "127.0.0.1", unused_port(), 3)
    mocap = np.zeros((4, env.sim.mjm.nmocap, 3)), np.tile([1.0, 0, 0, 0], (4, env.sim.mjm.nmocap, 1))
    followed = []
    viewer._follow = followed.append
    try:
        viewer.follow_box.value = True
        for asked, expected in ((1, 1), (2, 2), (3, 2)):  # env 3 is not shown: the last shown one
            viewer.follow_env.value = asked
            viewer.show(0.0, qpos, *mocap)
            positions, _ = viewer.poses(qpos[:3], mocap[0][:3], mocap[1][:3])
            np.testing.assert_allclose(followed[-1], positions[expected].mean(axis=0))
        assert not np.allclose(followed[0], followed[1]), "the envs stand apart"
    finally:
        viewer.stop()
