"""Model loading: MJCF file or string, URDF through MuJoCo's compiler, clear errors."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from phalanx.assets import asset_path
from phalanx.core.errors import ConfigError
from phalanx.sim import SimCfg, Simulator, load_model

PENDULUM_URDF = """<robot name="pendulum">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
</robot>
"""


def test_xml_string_and_file_give_the_same_model() -> None:
    path = asset_path("ant.xml")
    from_file, from_string = load_model(path), load_model(Path(path).read_text())
    assert (from_file.nq, from_file.nv, from_file.nu, from_file.ngeom) == (
        from_string.nq,
        from_string.nv,
        from_string.nu,
        from_string.ngeom,
    )


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nothere.xml: no such file"):
        load_model(tmp_path / "nothere.xml")


def test_urdf_pendulum_swings_like_mujoco_c(tmp_path: Path) -> None:
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(PENDULUM_URDF)
    sim = Simulator(load_model(urdf), 3, "cpu", SimCfg(decimation=1))
    assert sim.joint_names == ["swing"]
    start = torch.tensor([[1.0], [-0.5], [2.0]])
    sim.qpos[:] = start
    mjm = load_model(urdf)
    datas = [mujoco.MjData(mjm) for _ in range(3)]
    for d, q in zip(datas, start, strict=True):
        d.qpos[:] = q.numpy()
    for _ in range(250):  # 0.5 s at MuJoCo's default 2 ms timestep
        sim.step()
        for d in datas:
            mujoco.mj_step(mjm, d)
    np.testing.assert_allclose(sim.qpos.numpy(), np.stack([d.qpos for d in datas]), atol=1e-3)
    assert (sim.qpos - start).abs().min() > 0.2, "the pendulums must swing"


def test_a_video_of_a_urdf_with_only_visual_geometry_is_refused_in_one_line(tmp_path: Path) -> None:
    """MuJoCo drops a URDF link's <visual> geometry: with no geoms left the renderer would crash
    (a segmentation fault); the recorder refuses first, naming --video and the fix."""
    from phalanx.sim.video import EnvRecorder

    visual = "<visual><geometry><cylinder radius='0.02' length='1'/></geometry></visual>"
    urdf = tmp_path / "visual_only.urdf"
    urdf.write_text(PENDULUM_URDF.replace("</inertial>", "</inertial>" + visual))
    sim = Simulator(load_model(urdf), 1, "cpu", SimCfg(decimation=1))
    assert sim.mjm.ngeom == 0
    with pytest.raises(ConfigError) as error:
        EnvRecorder(sim)
    assert error.value.as_flag().startswith("--video: the model has no geoms to render")
