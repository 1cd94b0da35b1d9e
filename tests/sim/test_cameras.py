"""Cameras added by config: fixed in the world or riding on a body, seen by the tiled camera,
kept in the stored config, and refused by name when the settings are bad."""

from __future__ import annotations

import pytest
import torch

import phalanx
from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs import ObsTermCfg
from phalanx.envs.mdp import observations
from phalanx.envs.stored_cfg import env_cfg_from_data, env_cfg_to_data
from phalanx.sim.cameras import CameraCfg

SIDE = CameraCfg(pos=(0.0, -4.0, 1.0), xyaxes=(1.0, 0.0, 0.0, 0.0, 0.2, 1.0), fovy=60.0)
# On the pole, 0.3 m in front of it, looking back at it (the pole's local -y).
ON_POLE = CameraCfg(body="pole", pos=(0.0, 0.3, 0.3), xyaxes=(-1.0, 0.0, 0.0, 0.0, 0.0, 1.0), mode="track")


def _cartpole_with(cameras: dict[str, CameraCfg], image_camera: str | None = None):
    cfg = phalanx.env_cfg("cartpole")
    cfg.cameras = cameras
    if image_camera is not None:
        params = {"camera": image_camera, "width": 16, "height": 12, "data_type": "depth"}
        cfg.observations["image"] = {"depth": ObsTermCfg(func=observations.camera_image, params=params)}
    return cfg


def test_cameras_join_the_model_with_their_settings() -> None:
    env = make_cpu(_cartpole_with({"side": SIDE, "on_pole": ON_POLE}), num_envs=2)
    mjm = env.sim.mjm
    side, on_pole = mjm.camera("side"), mjm.camera("on_pole")
    assert side.fovy[0] == pytest.approx(60.0) and mjm.cam_bodyid[side.id] == 0
    assert mjm.cam_bodyid[on_pole.id] == mjm.body("pole").id
    assert on_pole.pos.tolist() == pytest.approx([0.0, 0.3, 0.3])


def test_a_camera_on_a_body_sees_the_same_depth_however_the_body_moves() -> None:
    """Riding on the pole ("track" keeps its orientation only while the pole stays upright, so
    the test moves the cart alone): the pole stays at the same depth; a world camera sees it move."""
    env = make_cpu(_cartpole_with({"on_pole": ON_POLE, "side": SIDE}, image_camera="on_pole"), num_envs=2)
    from phalanx.sensors import TiledCamera

    world = TiledCamera(env.sim, "side", 16, 12, ("depth",))
    cart = env.sim.joint_qposadr[env.joint_ids("slider")]
    env.sim.qpos[:, cart] = torch.tensor([[-0.5], [0.5]])
    env.sim.qpos[:, env.sim.joint_qposadr[env.joint_ids("hinge")]] = 0.0
    env.sim.qvel.zero_()
    env.step(torch.zeros(2, env.action_dim))
    riding = env.obs["image"][..., 0]
    torch.testing.assert_close(riding[0], riding[1], atol=1e-3, rtol=0)
    seen = world()["depth"][..., 0]
    assert not torch.allclose(seen[0], seen[1])


@pytest.mark.parametrize(
    ("camera", "message"),
    [
        (CameraCfg(body="mast"), "env.cameras.cam.body: no body 'mast'; the model has \\['world', 'cart', 'pole'\\]"),
        (CameraCfg(fovy=0.0), "env.cameras.cam.fovy: must be in \\[0.001, 179\\]"),
        (CameraCfg(mode="orbit"), "env.cameras.cam.mode: must be one of \\['fixed', 'track', 'trackcom'\\]"),
        (CameraCfg(xyaxes=(1.0, 0.0, 0.0, 2.0, 0.0, 0.0)), "env.cameras.cam.xyaxes: expected two non-parallel axes"),
    ],
)
def test_bad_camera_settings_name_the_field(camera: CameraCfg, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_cpu(_cartpole_with({"cam": camera}), num_envs=1)


def test_a_camera_the_model_already_has_is_refused() -> None:
    with pytest.raises(ConfigError, match="env.cameras.track: the model already has a camera named 'track'"):
        make_cpu(_cartpole_with({"track": SIDE}), num_envs=1)


def test_cameras_survive_the_stored_config() -> None:
    cfg = _cartpole_with({"on_pole": ON_POLE})
    restored = env_cfg_from_data(env_cfg_to_data(cfg), "test")
    assert restored.cameras == {"on_pole": ON_POLE}


def test_far_hides_what_lies_beyond_it_and_leaves_the_model_as_it_was() -> None:
    """cartpole's track camera stands 5 m in front of the cart: beyond a far of 4 m."""
    from phalanx.sensors import TiledCamera

    env = make_cpu("cartpole", num_envs=2)
    env.step(torch.zeros(2, env.action_dim))
    zfar = env.sim.mjm.vis.map.zfar
    cart = env.sim.mjm.geom("cart").id
    full = TiledCamera(env.sim, "track", 32, 32, ("depth", "segmentation"))()
    near = TiledCamera(env.sim, "track", 32, 32, ("depth", "segmentation"), far=4.0)()
    assert env.sim.mjm.vis.map.zfar == zfar
    assert (full["segmentation"] == cart).any() and not (near["segmentation"] == cart).any()
    assert float(full["depth"].max()) > 4.5 and 0.0 < float(near["depth"].max()) <= 4.0
    with pytest.raises(ValueError, match="camera far must be a finite distance > 0 in metres"):
        TiledCamera(env.sim, "track", far=0.0)
